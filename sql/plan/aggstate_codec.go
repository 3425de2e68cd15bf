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
	r := exReader{b: b}
	if r.code(0xc0) {
		return nil, r.b, nil
	}
	n, ok := r.arrayLen()
	if !ok || n > len(r.b) {
		return nil, nil, errAggStateLayout
	}
	sts := make([]AggState, n)
	for i := range sts {
		st := &sts[i]
		if len(r.b) < 1 || (r.b[0] != 0x85 && r.b[0] != 0x86) {
			return nil, nil, errAggStateLayout
		}
		overflow := r.b[0] == 0x86
		r.b = r.b[1:]
		if !r.key('b') {
			return nil, nil, errAggStateLayout
		}
		best, ok := r.bin()
		if !ok || !r.key('d') {
			return nil, nil, errAggStateLayout
		}
		st.Best = clone(best)
		if !r.code(0xc0) {
			m, ok := r.arrayLen()
			if !ok || m > len(r.b) {
				return nil, nil, errAggStateLayout
			}
			st.Distinct = make([][]byte, m)
			for j := range st.Distinct {
				d, ok := r.bin()
				if !ok {
					return nil, nil, errAggStateLayout
				}
				st.Distinct[j] = clone(d)
			}
		}
		if !r.key('f') || !r.code(0xcb) {
			return nil, nil, errAggStateLayout
		}
		st.F = math.Float64frombits(r.u64())
		if !r.key('i') || !r.code(0xd3) {
			return nil, nil, errAggStateLayout
		}
		st.I = int64(r.u64())
		if !r.key('n') || !r.code(0xd3) {
			return nil, nil, errAggStateLayout
		}
		st.N = int64(r.u64())
		if overflow {
			if !r.key('o') || !r.code(0xc3) {
				return nil, nil, errAggStateLayout
			}
			st.Overflow = true
		}
		if r.bad {
			return nil, nil, errAggStateLayout
		}
	}
	return sts, r.b, nil
}

// clone copies p, keeping nil nil and empty empty.
func clone(p []byte) []byte {
	if p == nil {
		return nil
	}
	return append(make([]byte, 0, len(p)), p...)
}

// arrayLen reads a msgpack array header.
func (r *exReader) arrayLen() (int, bool) {
	if len(r.b) < 1 {
		return 0, false
	}
	c := r.b[0]
	switch {
	case c&0xf0 == 0x90:
		r.b = r.b[1:]
		return int(c & 0x0f), true
	case c == 0xdc && len(r.b) >= 3:
		n := int(binary.BigEndian.Uint16(r.b[1:]))
		r.b = r.b[3:]
		return n, true
	case c == 0xdd && len(r.b) >= 5:
		n := int(binary.BigEndian.Uint32(r.b[1:]))
		r.b = r.b[5:]
		return n, true
	}
	return 0, false
}
