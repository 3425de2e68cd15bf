// Package canon writes msgpack in a canonical form: every map's entries sorted by their
// encoded keys. msgpack/v5 encodes a Go map in Go's random iteration order (its
// SetSortMapKeys covers only map[string]string, map[string]bool and
// map[string]interface{}), but bytes that replicas hash or cache — procedure results,
// window state — must be equal on every replica (DESIGN.md invariant 1).
package canon

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Msgpack rewrites the msgpack value b with the entries of every map, at any depth, sorted
// by their encoded keys, appended to dst. The result decodes to the same value.
func Msgpack(dst, b []byte) ([]byte, error) {
	d := msgpack.NewDecoder(bytes.NewReader(b))
	out, err := canonValue(d, dst)
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

// MayHoldMap reports whether a value of type t can encode a msgpack map: t is or contains
// a map, an interface (which may hold one), or a type with its own encoder. Values of the
// other types need no rewriting.
func MayHoldMap(t reflect.Type) bool { return mayHoldMap(t, map[reflect.Type]bool{}) }

var (
	customEncoder = reflect.TypeFor[msgpack.CustomEncoder]()
	marshaler     = reflect.TypeFor[msgpack.Marshaler]()
)

func mayHoldMap(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false // a recursive type: its other fields decide
	}
	seen[t] = true
	if t.Implements(customEncoder) || t.Implements(marshaler) ||
		reflect.PointerTo(t).Implements(customEncoder) || reflect.PointerTo(t).Implements(marshaler) {
		return true
	}
	switch t.Kind() {
	case reflect.Map, reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return mayHoldMap(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if mayHoldMap(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}
