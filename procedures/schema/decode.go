package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
)

// Member is one member of an Object.
type Member struct {
	Key   string
	Value any
}

// Object is a JSON object whose members keep their order: a struct's fields in field
// order. encoding/json prints it as an object.
type Object []Member

// MarshalJSON implements json.Marshaler.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.Value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// DecodeJSON decodes the msgpack value data, of type t, into a value encoding/json prints
// as it prints the Go type: a struct as an Object of its fields under their Go names, in
// field order (fields t does not know keep their msgpack key, after them); maps as JSON
// objects with their keys as text; bytes as []byte (base64); everything else as msgpack's
// generic decoding gives it. A value that does not fit t is decoded generically, not
// refused: t describes, the bytes are what the server sent. It fails (ErrMalformed) only
// on data that is not one msgpack value, or whose length headers claim more than it holds
// (CheckMsgpack).
func DecodeJSON(t *Type, data []byte) (any, error) {
	if err := CheckMsgpack(data); err != nil {
		return nil, fmt.Errorf("%w %v", ErrMalformed, err)
	}
	rd := bytes.NewReader(data)
	dec := msgpack.NewDecoder(rd)
	dec.SetMapDecoder(decodeMap)
	v, err := dec.DecodeInterface()
	if err != nil {
		return nil, fmt.Errorf("%w msgpack: %v", ErrMalformed, err)
	}
	if rd.Len() > 0 {
		return nil, fmt.Errorf("%w msgpack: trailing bytes after the value", ErrMalformed)
	}
	d := decoder{}
	return d.value(t, v), nil
}

// decodeMap decodes a msgpack map of any keys, as msgpack's DecodeUntypedMap does, but a
// key that Go cannot hash (a list, a map, bytes) is kept as its text instead of panicking.
func decodeMap(d *msgpack.Decoder) (any, error) {
	n, err := d.DecodeMapLen()
	if err != nil || n < 0 {
		return nil, err
	}
	m := make(map[any]any, min(n, 1024))
	for range n {
		k, err := d.DecodeInterface()
		if err != nil {
			return nil, err
		}
		v, err := d.DecodeInterface()
		if err != nil {
			return nil, err
		}
		switch k.(type) {
		case []any, map[any]any, []byte:
			k = keyText(k)
		}
		m[k] = v
	}
	return m, nil
}

// decoder is the state of one DecodeJSON.
type decoder struct {
	open []*Type // the named types being decoded, for refs
}

func (d *decoder) value(t *Type, v any) any {
	if t != nil && t.Kind == KindRef {
		r, err := resolve(d.open, t)
		if err != nil {
			t = nil
		} else {
			t = r
		}
	}
	if t == nil || v == nil {
		return plain(v)
	}
	if t.Name != "" {
		d.open = append(d.open, t)
		defer func() { d.open = d.open[:len(d.open)-1] }()
	}
	switch t.Kind {
	case KindSlice, KindArray:
		list, ok := v.([]any)
		if !ok {
			break
		}
		out := make([]any, len(list))
		for i, x := range list {
			out[i] = d.value(t.Elem, x)
		}
		return out
	case KindMap:
		m, ok := v.(map[any]any)
		if !ok {
			break
		}
		out := make(map[string]any, len(m))
		for k, x := range m {
			out[keyText(k)] = d.value(t.Elem, x)
		}
		return out
	case KindStruct:
		return d.structValue(t, v)
	case KindNullable, KindCustom:
		if t.Elem != nil {
			return d.value(t.Elem, v)
		}
	}
	return plain(v)
}

// structValue decodes a struct sent as a map of fields or, whatever AsArray says, as an
// array of field values (msgpack's decoder reads both).
func (d *decoder) structValue(t *Type, v any) any {
	switch x := v.(type) {
	case []any:
		if len(x) != len(t.Fields) {
			break
		}
		out := make(Object, len(x))
		for i := range t.Fields {
			f := &t.Fields[i]
			out[i] = Member{Key: f.display(), Value: d.value(&f.Type, x[i])}
		}
		return out
	case map[any]any:
		out := make(Object, 0, len(x))
		seen := make(map[any]bool, len(x))
		for i := range t.Fields {
			f := &t.Fields[i]
			if fv, ok := x[f.Name]; ok {
				seen[f.Name] = true
				out = append(out, Member{Key: f.display(), Value: d.value(&f.Type, fv)})
			}
		}
		var rest []Member
		for k, fv := range x {
			if !seen[k] {
				rest = append(rest, Member{Key: keyText(k), Value: plain(fv)})
			}
		}
		slices.SortFunc(rest, func(a, b Member) int { return strings.Compare(a.Key, b.Key) })
		return append(out, rest...)
	}
	return plain(v)
}

// plain converts a generically decoded msgpack value to one encoding/json prints: maps
// with text keys.
func plain(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[keyText(k)] = plain(e)
		}
		return out
	}
	return v
}

// keyText returns a map key as JSON object key text.
func keyText(k any) string {
	switch x := k.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return fmt.Sprint(k)
}
