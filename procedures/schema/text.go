package schema

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// Shape describes t as its JSON form is built, for people choosing a procedure's
// arguments: "none" for an empty struct, "Name{Field type, ...}" for a struct,
// "[]Elem{...}" for a slice of structs, "Name (int64)" for a named basic type. A
// custom-encoded type with a known encoding shows that encoding.
func (t *Type) Shape() string {
	switch t.Kind {
	case KindNullable:
		if t.Elem != nil {
			return t.Elem.Shape()
		}
	case KindCustom:
		if t.Elem != nil {
			return t.Elem.Shape()
		}
		return shortName(t.Name) + " (custom encoding)"
	case KindStruct:
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
	case KindSlice:
		if t.Elem != nil {
			return "[]" + t.Elem.Shape()
		}
	}
	if t.Name != "" && t.Kind != KindRef {
		return shortName(t.Name) + " (" + (&Type{Kind: t.Kind, Bits: t.Bits, Len: t.Len, Key: t.Key, Elem: t.Elem}).GoText() + ")"
	}
	return t.GoText()
}

// fieldType names a struct field's type briefly: bytes fields are base64 strings in JSON.
func fieldType(t *Type) string {
	switch {
	case t.Kind == KindBytes:
		return t.GoText() + " (base64)"
	case t.Kind == KindStruct, t.Kind == KindSlice && t.Elem != nil && t.Elem.Kind == KindStruct:
		return t.Shape()
	}
	return t.GoText()
}

// GoText spells t the Go way: int64, []string, map[string]int32, *Name (a named type by
// its name without the package); "?" for nil.
func (t *Type) GoText() string {
	if t == nil {
		return "?"
	}
	if t.Name != "" {
		return shortName(t.Name)
	}
	switch t.Kind {
	case KindInt, KindUint, KindFloat:
		return string(t.Kind) + strconv.Itoa(t.Bits)
	case KindBytes:
		if t.Len > 0 {
			return "[" + strconv.Itoa(t.Len) + "]byte"
		}
		return "[]byte"
	case KindSlice:
		return "[]" + t.Elem.GoText()
	case KindArray:
		return "[" + strconv.Itoa(t.Len) + "]" + t.Elem.GoText()
	case KindMap:
		return "map[" + t.Key.GoText() + "]" + t.Elem.GoText()
	case KindNullable:
		return "*" + t.Elem.GoText()
	case KindStruct:
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

// ZeroJSON returns the JSON value of t's zero value, a skeleton for a procedure's
// arguments: a struct as an Object of every field under its Go name.
func (t *Type) ZeroJSON() any {
	switch t.Kind {
	case KindBool:
		return false
	case KindInt, KindUint, KindFloat:
		return 0
	case KindString:
		return ""
	case KindBytes:
		if t.Len > 0 {
			return base64.StdEncoding.EncodeToString(make([]byte, t.Len))
		}
	case KindArray:
		if t.Elem != nil && t.Len <= 64 {
			out := make([]any, t.Len)
			for i := range out {
				out[i] = t.Elem.ZeroJSON()
			}
			return out
		}
	case KindCustom:
		if t.Elem != nil {
			return t.Elem.ZeroJSON()
		}
	case KindStruct:
		out := make(Object, len(t.Fields))
		for i := range t.Fields {
			f := &t.Fields[i]
			name := f.GoName
			if name == "" {
				name = f.Name
			}
			out[i] = Member{Key: name, Value: f.Type.ZeroJSON()}
		}
		return out
	}
	return nil
}
