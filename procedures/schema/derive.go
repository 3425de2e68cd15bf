package schema

import (
	"encoding"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
)

// Of describes the msgpack encoding of values of t, as the msgpack library encodes and
// decodes them: a struct's exported fields in order under their `msgpack:"name"` tag
// names (the Go name when untagged), "-" fields left out, omitempty and as_array noted,
// untagged embedded structs inlined; a pointer as nullable; a type with its own msgpack
// codec (CustomEncoder/Decoder, Marshaler/Unmarshaler, Binary- or TextMarshaler) as
// custom. A recursive type refers back to itself with a KindRef, and the parts of t past
// MaxDepth or MaxNodes are described as KindAny (a struct whose fields do not all fit is
// wholly KindAny: a partial field list would refuse the missing ones).
//
// Types registered with msgpack.Register or RegisterExt are not known to it; only their
// custom interfaces are.
func Of(t reflect.Type) Type {
	d := deriver{}
	return d.of(t, 1)
}

// deriver is the state of one Of.
type deriver struct {
	nodes    int            // Types made so far
	open     []reflect.Type // the named types being described, outermost first
	inlining []reflect.Type // the embedded structs whose fields are being inlined
}

var (
	customEncoder = []reflect.Type{
		reflect.TypeFor[msgpack.CustomEncoder](), reflect.TypeFor[msgpack.Marshaler](),
		reflect.TypeFor[encoding.BinaryMarshaler](), reflect.TypeFor[encoding.TextMarshaler](),
	}
	customDecoder = []reflect.Type{
		reflect.TypeFor[msgpack.CustomDecoder](), reflect.TypeFor[msgpack.Unmarshaler](),
		reflect.TypeFor[encoding.BinaryUnmarshaler](), reflect.TypeFor[encoding.TextUnmarshaler](),
	}
)

// implementsAny reports whether t or *t implements one of ifaces, as msgpack checks
// before it picks a generic codec.
func implementsAny(t reflect.Type, ifaces []reflect.Type) bool {
	if t.Kind() == reflect.Interface {
		return false
	}
	for _, i := range ifaces {
		if t.Implements(i) || (t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(i)) {
			return true
		}
	}
	return false
}

// nameOf returns t's package-qualified name, or "" for an unnamed or predeclared type.
func nameOf(t reflect.Type) string {
	if t.Name() == "" || t.PkgPath() == "" {
		return ""
	}
	return t.String()
}

func (d *deriver) of(t reflect.Type, depth int) Type {
	d.nodes++
	name := nameOf(t)
	if depth >= MaxDepth || d.nodes > MaxNodes {
		return Type{Kind: KindAny, Name: name}
	}
	if name != "" {
		for i := len(d.open) - 1; i >= 0; i-- {
			if nameOf(d.open[i]) != name {
				continue
			}
			if d.open[i] == t {
				return Type{Kind: KindRef, Name: name}
			}
			// Another type of the same name encloses this one: a ref would be ambiguous.
			return Type{Kind: KindAny, Name: name}
		}
		d.open = append(d.open, t)
		defer func() { d.open = d.open[:len(d.open)-1] }()
	}
	if t.Kind() != reflect.Pointer {
		switch {
		case implementsAny(t, customEncoder):
			return Type{Kind: KindCustom, Name: t.String()}
		case implementsAny(t, customDecoder):
			// Sent as the generic encoder writes it, read by the type's own decoder.
			natural := d.generic(t, depth+1)
			natural.Name = name
			return Type{Kind: KindCustom, Name: t.String(), Elem: &natural}
		}
	}
	out := d.generic(t, depth)
	out.Name = name
	return out
}

// generic describes t as msgpack's generic codec for its kind encodes it.
func (d *deriver) generic(t reflect.Type, depth int) Type {
	switch t.Kind() {
	case reflect.Bool:
		return Type{Kind: KindBool}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return Type{Kind: KindInt, Bits: bits(t)}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return Type{Kind: KindUint, Bits: bits(t)}
	case reflect.Float32, reflect.Float64:
		return Type{Kind: KindFloat, Bits: t.Bits()}
	case reflect.String:
		return Type{Kind: KindString}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return Type{Kind: KindBytes}
		}
		elem := d.of(t.Elem(), depth+1)
		return Type{Kind: KindSlice, Elem: &elem}
	case reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return Type{Kind: KindBytes, Len: t.Len()}
		}
		elem := d.of(t.Elem(), depth+1)
		return Type{Kind: KindArray, Len: t.Len(), Elem: &elem}
	case reflect.Map:
		key, elem := d.of(t.Key(), depth+1), d.of(t.Elem(), depth+1)
		return Type{Kind: KindMap, Key: &key, Elem: &elem}
	case reflect.Pointer:
		elem := d.of(t.Elem(), depth+1)
		return Type{Kind: KindNullable, Elem: &elem}
	case reflect.Interface:
		return Type{Kind: KindAny}
	case reflect.Struct:
		out := Type{Kind: KindStruct}
		out.Fields, out.AsArray = d.fields(t, depth, nil)
		if d.nodes > MaxNodes {
			// Some fields may be missing: a partial field list would refuse them.
			return Type{Kind: KindAny}
		}
		return out
	}
	return Type{Kind: KindUnsupported}
}

// bits returns the width of an integer type; int, uint and uintptr have the platform's.
func bits(t reflect.Type) int {
	switch t.Kind() {
	case reflect.Int, reflect.Uint, reflect.Uintptr:
		return strconv.IntSize
	}
	return t.Bits()
}

// fields describes the fields of struct t as msgpack lists them, after the fields in
// outer (those of the struct t is inlined into, for the shadowing rule), and whether t is
// encoded as an array.
func (d *deriver) fields(t reflect.Type, depth int, outer []Field) (fields []Field, asArray bool) {
	omitAll := false
	taken := func(name string) bool {
		for _, f := range outer {
			if f.Name == name {
				return true
			}
		}
		for _, f := range fields {
			if f.Name == name {
				return true
			}
		}
		return false
	}
	for i := range t.NumField() {
		if d.nodes > MaxNodes {
			return nil, false // the caller describes t as any
		}
		sf := t.Field(i)
		name, opts := parseTag(sf.Tag.Get("msgpack"))
		if name == "-" {
			continue
		}
		if sf.Name == "_msgpack" {
			asArray = opts["as_array"] || opts["asArray"]
			omitAll = omitAll || opts["omitempty"]
		}
		if !sf.IsExported() && !sf.Anonymous {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if sf.Anonymous && !opts["noinline"] {
			if inner, ok := d.inlinable(sf.Type); ok {
				d.inlining = append(d.inlining, inner)
				sub, _ := d.fields(inner, depth, append(append([]Field(nil), outer...), fields...))
				d.inlining = d.inlining[:len(d.inlining)-1]
				shadowed := false
				for _, f := range sub {
					shadowed = shadowed || taken(f.Name)
				}
				switch {
				case opts["inline"]:
					for _, f := range sub {
						if !taken(f.Name) {
							fields = append(fields, f)
						}
					}
					continue
				case !shadowed:
					fields = append(fields, sub...)
					continue
				}
			}
		}
		fields = append(fields, Field{Name: name, GoName: sf.Name, OmitEmpty: omitAll || opts["omitempty"],
			Type: d.of(sf.Type, depth+1)})
	}
	return fields, asArray
}

// inlinable returns the struct an embedded field of type t inlines: t or the struct it
// points to, if msgpack encodes it with its generic struct codec and it is not being
// described already (a struct embedding itself through a pointer).
func (d *deriver) inlinable(t reflect.Type) (reflect.Type, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || implementsAny(t, customEncoder) || implementsAny(t, customDecoder) {
		return nil, false
	}
	if slices.Contains(d.open, t) || slices.Contains(d.inlining, t) {
		return nil, false
	}
	return t, true
}

// parseTag splits a struct tag value into its name and its options.
func parseTag(tag string) (string, map[string]bool) {
	name, rest, _ := strings.Cut(tag, ",")
	opts := map[string]bool{}
	for _, o := range strings.Split(rest, ",") {
		if o != "" {
			opts[o] = true
		}
	}
	return name, opts
}
