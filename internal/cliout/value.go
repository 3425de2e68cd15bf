package cliout

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/lockstepdb/lockstep/procedures/schema"
)

// Value prints a decoded procedure result as a table: a struct as FIELD VALUE
// rows, a slice of structs as one row per element under a header of field names, a map
// as KEY VALUE rows, and anything else as its value alone.
func Value(w io.Writer, v reflect.Value) error {
	v = deref(v)
	tw := NewTable(w)
	switch {
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fmt.Fprintf(tw, "%s\t%s\n", f.Name, Cell(v.Field(i)))
			}
		}
	case (v.Kind() == reflect.Slice || v.Kind() == reflect.Array) && elemType(v.Type()).Kind() == reflect.Struct:
		elem := elemType(v.Type())
		var head []string
		for i := range elem.NumField() {
			if f := elem.Field(i); f.IsExported() {
				head = append(head, strings.ToUpper(f.Name))
			}
		}
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for i := range v.Len() {
			row := deref(v.Index(i))
			var cells []string
			for j := range elem.NumField() {
				if elem.Field(j).IsExported() {
					if row.IsValid() {
						cells = append(cells, Cell(row.Field(j)))
					} else {
						cells = append(cells, "-")
					}
				}
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
	case v.Kind() == reflect.Map:
		iter := v.MapRange()
		var rows []string
		for iter.Next() {
			rows = append(rows, fmt.Sprintf("%s\t%s", Cell(iter.Key()), Cell(iter.Value())))
		}
		slices.Sort(rows)
		for _, r := range rows {
			fmt.Fprintln(tw, r)
		}
	default:
		fmt.Fprintln(tw, Cell(v))
	}
	return tw.Flush()
}

// Cell renders one value for a table: bytes as text when they are valid UTF-8 (else as
// JSON's base64), composite values as compact JSON.
func Cell(v reflect.Value) string {
	v = deref(v)
	if !v.IsValid() {
		return "-"
	}
	if isBytes(v.Type()) {
		return BytesText(v.Bytes())
	}
	switch v.Kind() {
	case reflect.Struct, reflect.Slice, reflect.Array, reflect.Map:
		b, err := json.Marshal(v.Interface())
		if err != nil {
			return fmt.Sprint(v.Interface())
		}
		return string(b)
	}
	return fmt.Sprint(v.Interface())
}

// BytesText returns b as text if it is valid UTF-8 without control characters, else as
// "base64:..." (the form JSON uses).
func BytesText(b []byte) string {
	if utf8.Valid(b) && !strings.ContainsFunc(string(b), func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return string(b)
	}
	s, _ := json.Marshal(b)
	return "base64:" + strings.Trim(string(s), `"`)
}

// elemType returns the element type of a slice or array type, pointers followed.
func elemType(t reflect.Type) reflect.Type {
	e := t.Elem()
	for e.Kind() == reflect.Pointer {
		e = e.Elem()
	}
	return e
}

func isBytes(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8
}

// deref follows pointers and interfaces; a nil one gives the zero Value.
func deref(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}

// Dynamic prints a result decoded by its schema (schema.DecodeJSON) as
// Value prints a typed one: an object as FIELD VALUE rows, a list of objects as
// one row per element under a header of keys, a map as sorted KEY VALUE rows, anything
// else as its value alone.
func Dynamic(w io.Writer, v any) error {
	tw := NewTable(w)
	switch x := v.(type) {
	case schema.Object:
		for _, m := range x {
			fmt.Fprintf(tw, "%s\t%s\n", m.Key, DynamicCell(m.Value))
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\n", k, DynamicCell(x[k]))
		}
	case []any:
		head, ok := x, len(x) > 0
		for _, e := range head {
			_, isObj := e.(schema.Object)
			ok = ok && isObj
		}
		if !ok {
			fmt.Fprintln(tw, DynamicCell(v))
			break
		}
		var keys []string
		for _, m := range x[0].(schema.Object) {
			keys = append(keys, m.Key)
		}
		upper := make([]string, len(keys))
		for i, k := range keys {
			upper[i] = strings.ToUpper(k)
		}
		fmt.Fprintln(tw, strings.Join(upper, "\t"))
		for _, e := range x {
			cells := make([]string, len(keys))
			for i, k := range keys {
				cells[i] = "-"
				for _, m := range e.(schema.Object) {
					if m.Key == k {
						cells[i] = DynamicCell(m.Value)
					}
				}
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
	default:
		fmt.Fprintln(tw, DynamicCell(v))
	}
	return tw.Flush()
}

// DynamicCell renders one decoded value for a table, as Cell does a typed one.
func DynamicCell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case []byte:
		return BytesText(x)
	case string:
		return x
	case schema.Object, []any, map[string]any:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
	return fmt.Sprint(v)
}
