package main

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/lockstepdb/lockstep/procedures/schema"
)

// typeShape describes a procedure's argument or result type as its JSON form is built:
// "none" for an empty struct, "Name{Field type, ...}" for a struct, "[]Elem{...}" for a
// slice of structs, "Name (int64)" for a named basic type. A custom-encoded type with a
// known encoding shows that encoding.
func typeShape(t *schema.Type) string {
	switch t.Kind {
	case schema.KindNullable:
		if t.Elem != nil {
			return typeShape(t.Elem)
		}
	case schema.KindCustom:
		if t.Elem != nil {
			return typeShape(t.Elem)
		}
		return shortName(t.Name) + " (custom encoding)"
	case schema.KindStruct:
		if len(t.Fields) == 0 {
			return "none"
		}
		fields := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			name := f.GoName
			if name == "" {
				name = f.Name
			}
			fields[i] = name + " " + fieldType(&f.Type)
		}
		return shortName(t.Name) + "{" + strings.Join(fields, ", ") + "}"
	case schema.KindSlice:
		if t.Elem != nil {
			return "[]" + typeShape(t.Elem)
		}
	}
	if t.Name != "" && t.Kind != schema.KindRef {
		return shortName(t.Name) + " (" + goText(&schema.Type{Kind: t.Kind, Bits: t.Bits, Len: t.Len, Key: t.Key, Elem: t.Elem}) + ")"
	}
	return goText(t)
}

// fieldType names a struct field's type briefly: bytes fields are base64 strings in JSON.
func fieldType(t *schema.Type) string {
	switch {
	case t.Kind == schema.KindBytes:
		return goText(t) + " (base64)"
	case t.Kind == schema.KindStruct, t.Kind == schema.KindSlice && t.Elem != nil && t.Elem.Kind == schema.KindStruct:
		return typeShape(t)
	}
	return goText(t)
}

// goText spells a type the Go way: int64, []string, map[string]int32, *Name.
func goText(t *schema.Type) string {
	if t == nil {
		return "?"
	}
	if t.Name != "" {
		return shortName(t.Name)
	}
	switch t.Kind {
	case schema.KindInt, schema.KindUint, schema.KindFloat:
		return string(t.Kind) + strconv.Itoa(t.Bits)
	case schema.KindBytes:
		if t.Len > 0 {
			return "[" + strconv.Itoa(t.Len) + "]byte"
		}
		return "[]byte"
	case schema.KindSlice:
		return "[]" + goText(t.Elem)
	case schema.KindArray:
		return "[" + strconv.Itoa(t.Len) + "]" + goText(t.Elem)
	case schema.KindMap:
		return "map[" + goText(t.Key) + "]" + goText(t.Elem)
	case schema.KindNullable:
		return "*" + goText(t.Elem)
	case schema.KindStruct:
		return "struct"
	}
	return string(t.Kind)
}

// shortName drops the package of a qualified type name: builtin.VoteArgs is VoteArgs.
func shortName(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 && !strings.ContainsAny(name[i:], "[]") {
		return name[i+1:]
	}
	return name
}

// zeroJSON returns the JSON of t's zero value, a skeleton for --args: a struct as an
// object of every field under its Go name.
func zeroJSON(t *schema.Type) any {
	switch t.Kind {
	case schema.KindBool:
		return false
	case schema.KindInt, schema.KindUint, schema.KindFloat:
		return 0
	case schema.KindString:
		return ""
	case schema.KindBytes:
		if t.Len > 0 {
			return base64.StdEncoding.EncodeToString(make([]byte, t.Len))
		}
	case schema.KindArray:
		if t.Elem != nil && t.Len <= 64 {
			out := make([]any, t.Len)
			for i := range out {
				out[i] = zeroJSON(t.Elem)
			}
			return out
		}
	case schema.KindCustom:
		if t.Elem != nil {
			return zeroJSON(t.Elem)
		}
	case schema.KindStruct:
		out := make(schema.Object, len(t.Fields))
		for i := range t.Fields {
			f := &t.Fields[i]
			name := f.GoName
			if name == "" {
				name = f.Name
			}
			out[i] = schema.Member{Key: name, Value: zeroJSON(&f.Type)}
		}
		return out
	}
	return nil
}
