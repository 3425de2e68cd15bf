package schema

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
)

// ErrDuplicateField: a JSON object names one struct field twice (as its Go name and as
// its msgpack name, say).
var ErrDuplicateField = errors.New("field given twice")

// EncodeJSON returns the msgpack encoding of the JSON value data as a value of type t:
// the bytes a Go program would send for the same value, up to integer widths and map
// order. A struct is a JSON object whose keys are field names — the Go name (also in
// another case, as encoding/json matches) or the msgpack name — and is sent as a map of
// the fields given, in field order; bytes are base64 strings; integers must fit their
// width; null is nil for any type. A KindAny value is sent as JSON's natural msgpack
// form (objects as maps, integral numbers as integers). Errors wrap ErrUnknownField,
// ErrDuplicateField, ErrWrongType, ErrOutOfRange, ErrNotEncodable or ErrMalformed (a bad
// t) and name the path of the value at fault.
func EncodeJSON(t *Type, data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", ErrWrongType, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: not one JSON value: more follows it", ErrWrongType)
	}
	var buf bytes.Buffer
	e := encoder{enc: msgpack.NewEncoder(&buf)}
	e.enc.SetSortMapKeys(true)
	e.enc.UseCompactInts(true)
	if err := e.value(t, v, ""); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encoder is the state of one EncodeJSON.
type encoder struct {
	enc  *msgpack.Encoder
	open []*Type // the named types being encoded, for refs
}

// where names a path for an error: the root is "the value".
func where(path string) string {
	if path == "" {
		return "the value"
	}
	return path
}

// resolve returns the Type a ref names: the nearest enclosing one of that name.
func resolve(open []*Type, t *Type) (*Type, error) {
	for i := len(open) - 1; i >= 0; i-- {
		if open[i].Name == t.Name {
			return open[i], nil
		}
	}
	return nil, fmt.Errorf("%w schema: ref to %q, which does not enclose it", ErrMalformed, t.Name)
}

// jsonKind names a decoded JSON value's type, for errors.
func jsonKind(v any) string {
	switch v.(type) {
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "null"
}

func (e *encoder) wrong(path, want string, v any) error {
	return fmt.Errorf("%s: %w: want %s, got %s", where(path), ErrWrongType, want, jsonKind(v))
}

func (e *encoder) value(t *Type, v any, path string) error {
	if t == nil {
		return fmt.Errorf("%s: %w schema: no type", where(path), ErrMalformed)
	}
	if t.Kind == KindRef {
		r, err := resolve(e.open, t)
		if err != nil {
			return fmt.Errorf("%s: %w", where(path), err)
		}
		t = r
	}
	if v == nil {
		return e.enc.EncodeNil()
	}
	if t.Name != "" {
		e.open = append(e.open, t)
		defer func() { e.open = e.open[:len(e.open)-1] }()
	}
	switch t.Kind {
	case KindBool:
		b, ok := v.(bool)
		if !ok {
			return e.wrong(path, "true or false", v)
		}
		return e.enc.EncodeBool(b)
	case KindInt, KindUint, KindFloat:
		return e.number(t, v, path)
	case KindString:
		s, ok := v.(string)
		if !ok {
			return e.wrong(path, "a string", v)
		}
		return e.enc.EncodeString(s)
	case KindBytes:
		s, ok := v.(string)
		if !ok {
			return e.wrong(path, "a base64 string", v)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("%s: %w: want a base64 string: %v", where(path), ErrWrongType, err)
		}
		if t.Len > 0 && len(b) != t.Len {
			return fmt.Errorf("%s: %w: want exactly %d bytes, got %d", where(path), ErrOutOfRange, t.Len, len(b))
		}
		return e.enc.EncodeBytes(b)
	case KindSlice, KindArray:
		list, ok := v.([]any)
		if !ok {
			return e.wrong(path, "an array", v)
		}
		if t.Kind == KindArray && len(list) != t.Len {
			return fmt.Errorf("%s: %w: want an array of exactly %d elements, got %d", where(path), ErrOutOfRange, t.Len, len(list))
		}
		if err := e.enc.EncodeArrayLen(len(list)); err != nil {
			return err
		}
		for i, x := range list {
			if err := e.value(t.Elem, x, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		return nil
	case KindMap:
		return e.mapValue(t, v, path)
	case KindStruct:
		return e.structValue(t, v, path)
	case KindNullable:
		return e.value(t.Elem, v, path)
	case KindAny:
		return e.enc.Encode(natural(v))
	case KindCustom:
		if t.Elem == nil {
			return fmt.Errorf("%s: %s %w: it has its own msgpack encoding", where(path), t.Name, ErrNotEncodable)
		}
		return e.value(t.Elem, v, path)
	}
	return fmt.Errorf("%s: %w: a %s value", where(path), ErrNotEncodable, t.Kind)
}

// number encodes the JSON number v as an integer or float of t's width.
func (e *encoder) number(t *Type, v any, path string) error {
	n, ok := v.(json.Number)
	if !ok {
		return e.wrong(path, "a number", v)
	}
	bits := t.Bits
	if bits <= 0 || bits > 64 {
		bits = 64
	}
	switch t.Kind {
	case KindInt:
		i, err := strconv.ParseInt(string(n), 10, bits)
		if err != nil {
			return fmt.Errorf("%s: %w: want an integer of %d bits, got %s", where(path), ErrOutOfRange, bits, n)
		}
		return e.enc.EncodeInt(i)
	case KindUint:
		u, err := strconv.ParseUint(string(n), 10, bits)
		if err != nil {
			return fmt.Errorf("%s: %w: want an unsigned integer of %d bits, got %s", where(path), ErrOutOfRange, bits, n)
		}
		return e.enc.EncodeUint(u)
	}
	if bits == 32 {
		f, err := strconv.ParseFloat(string(n), 32)
		if err != nil {
			return fmt.Errorf("%s: %w: want a 32-bit float, got %s", where(path), ErrOutOfRange, n)
		}
		return e.enc.EncodeFloat32(float32(f))
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return fmt.Errorf("%s: %w: want a 64-bit float, got %s", where(path), ErrOutOfRange, n)
	}
	return e.enc.EncodeFloat64(f)
}

// mapValue encodes the JSON object v as a map of t; its keys are parsed as t.Key.
func (e *encoder) mapValue(t *Type, v any, path string) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return e.wrong(path, "an object", v)
	}
	if t.Key == nil || t.Elem == nil {
		return fmt.Errorf("%s: %w schema: a map without key or element type", where(path), ErrMalformed)
	}
	key := t.Key
	for key.Kind == KindNullable && key.Elem != nil {
		key = key.Elem
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if err := e.enc.EncodeMapLen(len(keys)); err != nil {
		return err
	}
	for _, k := range keys {
		kpath := path + "[" + strconv.Quote(k) + "]"
		var err error
		switch key.Kind {
		case KindString:
			err = e.enc.EncodeString(k)
		case KindInt, KindUint, KindFloat:
			err = e.number(key, json.Number(k), kpath+" (key)")
		case KindBool:
			b, perr := strconv.ParseBool(k)
			if perr != nil {
				return fmt.Errorf("%s (key): %w: want true or false", kpath, ErrWrongType)
			}
			err = e.enc.EncodeBool(b)
		default:
			return fmt.Errorf("%s: %w: a map with %s keys", where(path), ErrNotEncodable, key.Kind)
		}
		if err != nil {
			return err
		}
		if err := e.value(t.Elem, obj[k], kpath); err != nil {
			return err
		}
	}
	return nil
}

// structValue encodes the JSON object v as a map of the struct's fields it gives, in
// field order.
func (e *encoder) structValue(t *Type, v any, path string) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return e.wrong(path, "an object", v)
	}
	given := make([]string, len(t.Fields)) // the JSON key of each field given
	for k := range obj {
		i := fieldIndex(t.Fields, k)
		if i < 0 {
			return fmt.Errorf("%s: %w %q; the fields are %s", where(path), ErrUnknownField, k, fieldList(t.Fields))
		}
		if given[i] != "" {
			a, b := given[i], k
			if b < a {
				a, b = b, a
			}
			return fmt.Errorf("%s: %w: %s, as %q and as %q", where(path), ErrDuplicateField, t.Fields[i].GoName, a, b)
		}
		given[i] = k
	}
	n := 0
	for _, k := range given {
		if k != "" {
			n++
		}
	}
	if err := e.enc.EncodeMapLen(n); err != nil {
		return err
	}
	for i, k := range given {
		if k == "" {
			continue
		}
		f := &t.Fields[i]
		if err := e.enc.EncodeString(f.Name); err != nil {
			return err
		}
		if err := e.value(&f.Type, obj[k], path+"."+f.display()); err != nil {
			return err
		}
	}
	return nil
}

// fieldIndex returns the index of the field a JSON key names, -1 for none: the Go name,
// then the Go name in another case (as encoding/json matches), then the msgpack name.
func fieldIndex(fields []Field, key string) int {
	for i, f := range fields {
		if f.GoName == key {
			return i
		}
	}
	for i, f := range fields {
		if f.GoName != "" && strings.EqualFold(f.GoName, key) {
			return i
		}
	}
	for i, f := range fields {
		if f.Name == key {
			return i
		}
	}
	return -1
}

// display returns the name a path shows for f: its Go name if it has one.
func (f *Field) display() string {
	if f.GoName != "" {
		return f.GoName
	}
	return f.Name
}

// fieldList lists fields for an error: `"Delta" (or "d"), "Line"`, or "none".
func fieldList(fields []Field) string {
	if len(fields) == 0 {
		return "none"
	}
	var parts []string
	for _, f := range fields {
		s := strconv.Quote(f.display())
		if f.GoName != "" && f.Name != f.GoName {
			s += " (or " + strconv.Quote(f.Name) + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// natural converts a decoded JSON value to the value msgpack encodes in its natural
// form: integral numbers as integers, others as floats.
func natural(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return u
		}
		f, _ := strconv.ParseFloat(string(x), 64) // out of range: ±Inf
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = natural(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = natural(e)
		}
		return out
	}
	return v
}
