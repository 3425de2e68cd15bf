package window

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// canonical rewrites a msgpack value with the entries of every map, at any depth, sorted
// by their encoded keys. msgpack encodes a Go map in Go's random iteration order (its
// SetSortMapKeys covers only a few map types), but a window's state bytes are hashed and
// must be equal on every replica (DESIGN.md invariant 1). The result decodes to the same
// value.
func canonical(b []byte) ([]byte, error) {
	d := msgpack.NewDecoder(bytes.NewReader(b))
	out, err := canonValue(d, make([]byte, 0, len(b)))
	if err != nil {
		return nil, fmt.Errorf("canonical msgpack: %w", err)
	}
	return out, nil
}

func canonValue(d *msgpack.Decoder, out []byte) ([]byte, error) {
	c, err := d.PeekCode()
	if err != nil {
		return nil, err
	}
	switch {
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		n, err := d.DecodeMapLen()
		if err != nil {
			return nil, err
		}
		type entry struct{ k, v []byte }
		entries := make([]entry, n)
		for i := range entries {
			if entries[i].k, err = canonValue(d, nil); err != nil {
				return nil, err
			}
			if entries[i].v, err = canonValue(d, nil); err != nil {
				return nil, err
			}
		}
		slices.SortFunc(entries, func(a, b entry) int { return bytes.Compare(a.k, b.k) })
		out = appendLen(out, n, msgpcode.FixedMapLow, msgpcode.Map16, msgpcode.Map32)
		for _, e := range entries {
			out = append(append(out, e.k...), e.v...)
		}
		return out, nil
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		n, err := d.DecodeArrayLen()
		if err != nil {
			return nil, err
		}
		out = appendLen(out, n, msgpcode.FixedArrayLow, msgpcode.Array16, msgpcode.Array32)
		for range n {
			if out, err = canonValue(d, out); err != nil {
				return nil, err
			}
		}
		return out, nil
	default:
		raw, err := d.DecodeRaw()
		return append(out, raw...), err
	}
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
