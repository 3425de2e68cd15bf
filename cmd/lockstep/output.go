package main

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/lockstepdb/lockstep/procedures/schema"
	"github.com/urfave/cli/v2"
)

// The two output formats of --output.
const (
	outputTable = "table"
	outputJSON  = "json"
)

// outputFormat returns the command's --output value, checked.
func outputFormat(c *cli.Context) (string, error) {
	switch f := c.String("output"); f {
	case outputTable, outputJSON:
		return f, nil
	default:
		return "", fmt.Errorf("--output %q: want table or json", f)
	}
}

// writeJSON writes v as indented JSON and a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// newTable returns a tabwriter for aligned columns; Flush it when done.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// writeValueTable prints a decoded procedure result as a table: a struct as FIELD VALUE
// rows, a slice of structs as one row per element under a header of field names, a map
// as KEY VALUE rows, and anything else as its value alone.
func writeValueTable(w io.Writer, v reflect.Value) error {
	v = deref(v)
	tw := newTable(w)
	switch {
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fmt.Fprintf(tw, "%s\t%s\n", f.Name, cell(v.Field(i)))
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
						cells = append(cells, cell(row.Field(j)))
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
			rows = append(rows, fmt.Sprintf("%s\t%s", cell(iter.Key()), cell(iter.Value())))
		}
		slices.Sort(rows)
		for _, r := range rows {
			fmt.Fprintln(tw, r)
		}
	default:
		fmt.Fprintln(tw, cell(v))
	}
	return tw.Flush()
}

// cell renders one value for a table: bytes as text when they are valid UTF-8 (else as
// JSON's base64), composite values as compact JSON.
func cell(v reflect.Value) string {
	v = deref(v)
	if !v.IsValid() {
		return "-"
	}
	if isBytes(v.Type()) {
		return bytesText(v.Bytes())
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

// bytesText returns b as text if it is valid UTF-8 without control characters, else as
// "base64:..." (the form JSON uses).
func bytesText(b []byte) string {
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

// writeDynamicTable prints a result decoded by its schema (schema.DecodeJSON) as
// writeValueTable prints a typed one: an object as FIELD VALUE rows, a list of objects as
// one row per element under a header of keys, a map as sorted KEY VALUE rows, anything
// else as its value alone.
func writeDynamicTable(w io.Writer, v any) error {
	tw := newTable(w)
	switch x := v.(type) {
	case schema.Object:
		for _, m := range x {
			fmt.Fprintf(tw, "%s\t%s\n", m.Key, dynamicCell(m.Value))
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\n", k, dynamicCell(x[k]))
		}
	case []any:
		head, ok := x, len(x) > 0
		for _, e := range head {
			_, isObj := e.(schema.Object)
			ok = ok && isObj
		}
		if !ok {
			fmt.Fprintln(tw, dynamicCell(v))
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
						cells[i] = dynamicCell(m.Value)
					}
				}
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
	default:
		fmt.Fprintln(tw, dynamicCell(v))
	}
	return tw.Flush()
}

// dynamicCell renders one decoded value for a table, as cell does a typed one.
func dynamicCell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case []byte:
		return bytesText(x)
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
