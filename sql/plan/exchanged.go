package plan

import (
	"encoding/binary"

	"github.com/vmihailenco/msgpack/v5"
)

// The exchange records (n.by_key and the like: exchanged) at the byte level. They are
// stream records, replicated and hashed, so marshalExchanged writes exactly what
// msgpack.Marshal writes for an *exchanged — a map of its fields in declaration order,
// the int64 and uint64 in their 9-byte forms, the byte slices as bin (nil as nil), Side
// and Neg only when set (omitempty), Side as a uint8 — and unmarshalExchanged reads that
// layout, handing anything else to msgpack (TestExchangedMatchesMsgpack).

// marshalExchanged returns msgpack's encoding of x.
func marshalExchanged(x *exchanged) ([]byte, error) {
	n := 4
	if x.Side != 0 {
		n++
	}
	if x.Neg {
		n++
	}
	b := make([]byte, 0, 40+len(x.Key)+len(x.Row))
	b = append(b, 0x80|byte(n), 0xa1, 'w', 0xd3)
	b = binary.BigEndian.AppendUint64(b, uint64(x.Stamp))
	b = appendBin(append(b, 0xa1, 'k'), x.Key)
	b = append(b, 0xa1, 'o', 0xcf)
	b = binary.BigEndian.AppendUint64(b, x.Off)
	b = appendBin(append(b, 0xa1, 'r'), x.Row)
	if x.Side != 0 {
		b = append(b, 0xa1, 's', 0xcc, x.Side)
	}
	if x.Neg {
		b = append(b, 0xa1, 'n', 0xc3)
	}
	return b, nil
}

// unmarshalExchanged decodes b into x (zeroed first). Key and Row are copies, as
// msgpack.Unmarshal makes them.
func unmarshalExchanged(b []byte, x *exchanged) error {
	*x = exchanged{}
	if decodeExchangedBytes(b, x) {
		return nil
	}
	*x = exchanged{}
	return msgpack.Unmarshal(b, x)
}

// decodeExchangedBytes reads the layout marshalExchanged writes and reports whether b
// was exactly that; x may be partly written when it was not.
func decodeExchangedBytes(b []byte, x *exchanged) bool {
	r := rowReader{b: b, ok: true}
	c := r.byte1()
	if c < 0x84 || c > 0x86 {
		return false
	}
	extra := int(c - 0x84) // fields past the four always written: Side, Neg
	r.key('w')
	r.expect(0xd3)
	x.Stamp = int64(r.uint(8))
	r.key('k')
	key := r.bin()
	r.key('o')
	r.expect(0xcf)
	x.Off = r.uint(8)
	r.key('r')
	row := r.bin()
	// Side, when written, comes before Neg; its key tells the two apart.
	if extra > 0 && len(r.b) >= 2 && r.b[1] == 's' {
		r.key('s')
		r.expect(0xcc)
		if x.Side = r.byte1(); x.Side == 0 {
			r.fail() // omitempty never writes a zero Side
		}
		extra--
	}
	if extra > 0 {
		r.key('n')
		r.expect(0xc3)
		x.Neg = true
		extra--
	}
	if extra != 0 || !r.ok || len(r.b) != 0 {
		return false
	}
	// One allocation for both copies; a nil slice stays nil.
	buf := make([]byte, len(key)+len(row))
	if key != nil {
		x.Key = buf[:len(key):len(key)]
		copy(x.Key, key)
	}
	if row != nil {
		x.Row = buf[len(key):]
		copy(x.Row, row)
	}
	return true
}
