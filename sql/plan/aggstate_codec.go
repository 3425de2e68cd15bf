package plan

import (
	"encoding/binary"
	"errors"
	"math"
)

// A windowed view's state value, []AggState, at the byte level (window.Config's
// AppendValue and DecodeValue): the canonical msgpack the window operator stores — the
// slice as an array (nil as nil), each state as a map of its fields sorted by name (b, d,
// f, i, n, and o only when set), the int64s in their 9-byte form, the double as float64,
// the byte slices as bin (nil as nil). TestAggStatesMatchCanonical holds it to
// msgpack.Marshal followed by canon.Msgpack.

var errAggStateLayout = errors.New("not the canonical layout of window aggregate states")

// appendAggStates appends the canonical msgpack of sts.
func appendAggStates(b []byte, sts []AggState) []byte {
	if sts == nil {
		return append(b, 0xc0)
	}
	b = appendArrayLen(b, len(sts))
	for i := range sts {
		st := &sts[i]
		n := byte(5)
		if st.Overflow {
			n = 6
		}
		b = appendBin(append(b, 0x80|n, 0xa1, 'b'), st.Best)
		b = append(b, 0xa1, 'd')
		if st.Distinct == nil {
			b = append(b, 0xc0)
		} else {
			b = appendArrayLen(b, len(st.Distinct))
			for _, d := range st.Distinct {
				b = appendBin(b, d)
			}
		}
		b = binary.BigEndian.AppendUint64(append(b, 0xa1, 'f', 0xcb), math.Float64bits(st.F))
		b = binary.BigEndian.AppendUint64(append(b, 0xa1, 'i', 0xd3), uint64(st.I))
		b = binary.BigEndian.AppendUint64(append(b, 0xa1, 'n', 0xd3), uint64(st.N))
		if st.Overflow {
			b = append(b, 0xa1, 'o', 0xc3)
		}
	}
	return b
}

// decodeAggStates reads what appendAggStates writes, copying the byte slices, and
// returns the bytes after it.
func decodeAggStates(b []byte) ([]AggState, []byte, error) {
	r := rowReader{b: b, ok: true}
	if readNil(&r) {
		return nil, r.b, nil
	}
	// Each state takes at least a byte, so a count beyond the bytes left is refused
	// before it is allocated.
	n := r.arrayLen()
	if !r.ok || n > len(r.b) {
		return nil, nil, errAggStateLayout
	}
	sts := make([]AggState, n)
	for i := range sts {
		st := &sts[i]
		c := r.byte1()
		if c != 0x85 && c != 0x86 {
			return nil, nil, errAggStateLayout
		}
		r.key('b')
		st.Best = clone(r.bin())
		r.key('d')
		if !readNil(&r) {
			m := r.arrayLen()
			if !r.ok || m > len(r.b) {
				return nil, nil, errAggStateLayout
			}
			st.Distinct = make([][]byte, m)
			for j := range st.Distinct {
				st.Distinct[j] = clone(r.bin())
			}
		}
		r.key('f')
		r.expect(0xcb)
		st.F = math.Float64frombits(r.uint(8))
		r.key('i')
		r.expect(0xd3)
		st.I = int64(r.uint(8))
		r.key('n')
		r.expect(0xd3)
		st.N = int64(r.uint(8))
		if c == 0x86 {
			r.key('o')
			r.expect(0xc3)
			st.Overflow = true
		}
		if !r.ok {
			return nil, nil, errAggStateLayout
		}
	}
	return sts, r.b, nil
}

// readNil reads a nil if one is next, for the fields that are nil or an array.
func readNil(r *rowReader) bool {
	if len(r.b) > 0 && r.b[0] == 0xc0 {
		r.b = r.b[1:]
		return true
	}
	return false
}

// clone copies p, keeping nil nil and empty empty.
func clone(p []byte) []byte {
	if p == nil {
		return nil
	}
	return append(make([]byte, 0, len(p)), p...)
}
