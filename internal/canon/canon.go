package canon

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// ErrMalformed is the error for bytes that are not one well-formed msgpack value.
var ErrMalformed = errors.New("malformed msgpack")

// Msgpack rewrites the msgpack value b with the entries of every map, at any depth, sorted
// by their encoded keys, appended to dst. The result decodes to the same value. Bytes
// after the first value are ignored.
//
// It works on the bytes alone, with no decoder: each map's entries are rewritten in
// place in dst and only moved when they are out of order, so that an already canonical
// value (the common case: a struct whose field names are sorted) costs one copy.
func Msgpack(dst, b []byte) ([]byte, error) {
	out, _, err := canonValue(dst, b)
	if err != nil {
		return nil, fmt.Errorf("canonical msgpack: %w", err)
	}
	return out, nil
}

// span is one map entry rewritten into out: its key at [k, v), its value at [v, end).
type span struct{ k, v, end int }

// canonValue appends the canonical form of the value at the start of b to out and returns
// the rest of b.
func canonValue(out, b []byte) ([]byte, []byte, error) {
	if len(b) == 0 {
		return nil, nil, fmt.Errorf("%w: unexpected end", ErrMalformed)
	}
	n, hdr, isMap, isArray := containerLen(b)
	switch {
	case hdr < 0:
		return nil, nil, fmt.Errorf("%w: unexpected end", ErrMalformed)
	case isArray:
		b = b[hdr:]
		out = appendLen(out, n, 0x90, 0xdc, 0xdd)
		var err error
		for range n {
			if out, b, err = canonValue(out, b); err != nil {
				return nil, nil, err
			}
		}
		return out, b, nil
	case isMap:
		b = b[hdr:]
		out = appendLen(out, n, 0x80, 0xde, 0xdf)
		base := len(out)
		var stack [16]span
		spans := stack[:0]
		if n > len(stack) {
			spans = make([]span, 0, min(n, len(b)/2+1))
		}
		sorted := true
		var err error
		for i := range n {
			s := span{k: len(out)}
			if out, b, err = canonValue(out, b); err != nil {
				return nil, nil, err
			}
			s.v = len(out)
			if out, b, err = canonValue(out, b); err != nil {
				return nil, nil, err
			}
			s.end = len(out)
			if i > 0 {
				p := spans[i-1]
				if bytes.Compare(out[p.k:p.v], out[s.k:s.v]) >= 0 {
					sorted = false
				}
			}
			spans = append(spans, s)
		}
		if sorted {
			return out, b, nil
		}
		// The same sort, over the same entries, as the decoder-based rewriting this
		// replaced, so that equal keys (only a custom encoder writes them) keep its order.
		body := slices.Clone(out[base:])
		slices.SortFunc(spans, func(x, y span) int {
			return bytes.Compare(body[x.k-base:x.v-base], body[y.k-base:y.v-base])
		})
		out = out[:base]
		for _, s := range spans {
			out = append(out, body[s.k-base:s.end-base]...)
		}
		return out, b, nil
	default:
		size := scalarSize(b)
		if size < 0 || size > len(b) {
			return nil, nil, fmt.Errorf("%w: code 0x%02x: unexpected end", ErrMalformed, b[0])
		}
		if size == 0 {
			return nil, nil, fmt.Errorf("%w: invalid code 0x%02x", ErrMalformed, b[0])
		}
		return append(out, b[:size]...), b[size:], nil
	}
}

// containerLen reads a map or array header at the start of b: its element count and
// header size (-1 if b is too short for the header).
func containerLen(b []byte) (n, hdr int, isMap, isArray bool) {
	c := b[0]
	switch {
	case c >= 0x80 && c <= 0x8f:
		return int(c & 0x0f), 1, true, false
	case c >= 0x90 && c <= 0x9f:
		return int(c & 0x0f), 1, false, true
	case c == 0xdc || c == 0xde:
		if len(b) < 3 {
			return 0, -1, c == 0xde, c == 0xdc
		}
		return int(binary.BigEndian.Uint16(b[1:])), 3, c == 0xde, c == 0xdc
	case c == 0xdd || c == 0xdf:
		if len(b) < 5 {
			return 0, -1, c == 0xdf, c == 0xdd
		}
		return int(binary.BigEndian.Uint32(b[1:])), 5, c == 0xdf, c == 0xdd
	}
	return 0, 0, false, false
}

// scalarSize is the encoded size of the value at the start of b, which is not a map or
// an array: 0 for an invalid code, -1 if b is too short to hold its length.
func scalarSize(b []byte) int {
	c := b[0]
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		return 1
	case c >= 0xa0 && c <= 0xbf:
		return 1 + int(c&0x1f)
	}
	switch c {
	case 0xcc, 0xd0:
		return 2
	case 0xcd, 0xd1:
		return 3
	case 0xca, 0xce, 0xd2:
		return 5
	case 0xcb, 0xcf, 0xd3:
		return 9
	case 0xd4:
		return 3
	case 0xd5:
		return 4
	case 0xd6:
		return 6
	case 0xd7:
		return 10
	case 0xd8:
		return 18
	case 0xc4, 0xd9: // bin8, str8
		return sized(b, 1, 2)
	case 0xc5, 0xda:
		return sized(b, 2, 3)
	case 0xc6, 0xdb:
		return sized(b, 4, 5)
	case 0xc7: // ext8: length, type, data
		return sized(b, 1, 3)
	case 0xc8:
		return sized(b, 2, 4)
	case 0xc9:
		return sized(b, 4, 6)
	}
	return 0
}

// sized is the size of a value whose w-byte big-endian length follows its code and whose
// data starts at hdr.
func sized(b []byte, w, hdr int) int {
	if len(b) < hdr {
		return -1
	}
	var n uint64
	for _, x := range b[1 : 1+w] {
		n = n<<8 | uint64(x)
	}
	if n > uint64(len(b)) {
		return -1
	}
	return hdr + int(n)
}

// appendLen appends a map or array header for n elements in its shortest form.
func appendLen(out []byte, n int, fixed, c16, c32 byte) []byte {
	switch {
	case n < 16:
		return append(out, fixed|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(out, c16), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(out, c32), uint32(n))
	}
}
