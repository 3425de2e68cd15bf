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
// was exactly that.
func decodeExchangedBytes(b []byte, x *exchanged) bool {
	if len(b) < 1 || b[0]&0xf0 != 0x80 {
		return false
	}
	n := int(b[0] & 0x0f)
	r := exReader{b: b[1:]}
	if n < 4 || n > 6 || !r.key('w') || !r.code(0xd3) {
		return false
	}
	x.Stamp = int64(r.u64())
	if !r.key('k') {
		return false
	}
	key, ok := r.bin()
	if !ok || !r.key('o') || !r.code(0xcf) {
		return false
	}
	x.Off = r.u64()
	if !r.key('r') {
		return false
	}
	row, ok := r.bin()
	if !ok {
		return false
	}
	extra := n - 4
	if extra > 0 && len(r.b) >= 2 && r.b[1] == 's' {
		if !r.key('s') || !r.code(0xcc) || len(r.b) < 1 || r.b[0] == 0 {
			return false
		}
		x.Side, r.b = r.b[0], r.b[1:]
		extra--
	}
	if extra > 0 {
		if !r.key('n') || !r.code(0xc3) {
			return false
		}
		x.Neg = true
		extra--
	}
	if extra != 0 || len(r.b) != 0 || r.bad {
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

// exReader reads the fixed parts of an exchange record.
type exReader struct {
	b   []byte
	bad bool
}

// key reads the one-letter fixstr key c.
func (r *exReader) key(c byte) bool {
	if len(r.b) < 2 || r.b[0] != 0xa1 || r.b[1] != c {
		return false
	}
	r.b = r.b[2:]
	return true
}

// code reads the byte c.
func (r *exReader) code(c byte) bool {
	if len(r.b) < 1 || r.b[0] != c {
		return false
	}
	r.b = r.b[1:]
	return true
}

func (r *exReader) u64() uint64 {
	if len(r.b) < 8 {
		r.bad, r.b = true, nil
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

// bin reads a bin (a shared slice of r's bytes) or nil.
func (r *exReader) bin() ([]byte, bool) {
	if len(r.b) < 1 {
		return nil, false
	}
	c := r.b[0]
	r.b = r.b[1:]
	n := 0
	switch c {
	case 0xc0:
		return nil, true
	case 0xc4:
		if len(r.b) < 1 {
			return nil, false
		}
		n, r.b = int(r.b[0]), r.b[1:]
	case 0xc5:
		if len(r.b) < 2 {
			return nil, false
		}
		n, r.b = int(binary.BigEndian.Uint16(r.b)), r.b[2:]
	case 0xc6:
		if len(r.b) < 4 {
			return nil, false
		}
		n, r.b = int(binary.BigEndian.Uint32(r.b)), r.b[4:]
	default:
		return nil, false
	}
	if n > len(r.b) {
		return nil, false
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p, true
}
