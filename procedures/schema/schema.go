package schema

import "errors"

// Errors of EncodeJSON and DecodeJSON. Each is wrapped with the path of the value at fault
// (".Items[2].Name"), so errors.Is finds it.
var (
	// ErrUnknownField: a JSON object names a field the struct does not have.
	ErrUnknownField = errors.New("unknown field")
	// ErrWrongType: a JSON value's type does not fit the described type (a string for an
	// integer, an array for a struct, ...).
	ErrWrongType = errors.New("wrong type")
	// ErrOutOfRange: a number does not fit the described width, or is not an integer where
	// one is wanted.
	ErrOutOfRange = errors.New("out of range")
	// ErrNotEncodable: the type cannot be built from JSON: a custom codec whose encoding the
	// schema does not know, or a Go type msgpack does not encode (a channel, a function).
	ErrNotEncodable = errors.New("cannot be encoded from JSON")
	// ErrMalformed: a msgpack value does not fit the described type, or a schema is not
	// well formed (a ref to no enclosing struct, a missing element type).
	ErrMalformed = errors.New("malformed")
)

// Limits of a derived Type. Past them Of describes the rest as KindAny, so a catalogue
// stays small however large or deep the registered types are.
const (
	// MaxDepth is the deepest nesting of Types in one derived Type.
	MaxDepth = 32
	// MaxNodes is the most Types (the type itself, its elements, fields' types, ...) in one
	// derived Type.
	MaxNodes = 1024
)

// Kind is the shape of a Type. Its values are the strings of the encoding.
type Kind string

// The kinds.
const (
	// KindBool is a boolean.
	KindBool Kind = "bool"
	// KindInt is a signed integer of Bits bits.
	KindInt Kind = "int"
	// KindUint is an unsigned integer of Bits bits.
	KindUint Kind = "uint"
	// KindFloat is a floating-point number of Bits (32 or 64) bits.
	KindFloat Kind = "float"
	// KindString is a UTF-8 string.
	KindString Kind = "string"
	// KindBytes is a byte string (msgpack bin; base64 in JSON); Len > 0 for a Go array of
	// exactly Len bytes.
	KindBytes Kind = "bytes"
	// KindSlice is a list of Elem of any length.
	KindSlice Kind = "slice"
	// KindArray is a list of exactly Len Elem.
	KindArray Kind = "array"
	// KindMap is a map from Key to Elem.
	KindMap Kind = "map"
	// KindStruct is a struct: a msgpack map from field names to values, or, if AsArray, a
	// msgpack array of the field values in order.
	KindStruct Kind = "struct"
	// KindNullable is Elem or nil (a Go pointer).
	KindNullable Kind = "nullable"
	// KindAny is any msgpack value (a Go interface, or a part of a type past MaxDepth or
	// MaxNodes).
	KindAny Kind = "any"
	// KindCustom is a type with its own msgpack encoder or decoder, named by Name. Elem, if
	// set, describes the encoding its values get from the generic encoder, which its
	// decoder reads (a type with a custom decoder only); without Elem its encoding is its
	// own business.
	KindCustom Kind = "custom"
	// KindRef is a recursive reference: the nearest enclosing Type whose Name is Name.
	KindRef Kind = "ref"
	// KindUnsupported is a Go type msgpack does not encode (channel, function, complex).
	KindUnsupported Kind = "unsupported"
)

// Type describes the msgpack encoding of a Go type.
type Type struct {
	// Kind is the shape.
	Kind Kind `msgpack:"kind" json:"kind"`
	// Name is the Go name of a named type, qualified by its package name
	// ("builtin.VoteArgs"); empty for unnamed types ([]string).
	Name string `msgpack:"name,omitempty" json:"name,omitempty"`
	// Bits is the width of an int, uint or float: 8, 16, 32 or 64.
	Bits int `msgpack:"bits,omitempty" json:"bits,omitempty"`
	// Len is the length of an array, or of a fixed-size bytes.
	Len int `msgpack:"len,omitempty" json:"len,omitempty"`
	// Key is the key type of a map.
	Key *Type `msgpack:"key,omitempty" json:"key,omitempty"`
	// Elem is the element type of a slice, array or map, the target of a nullable, and the
	// generic encoding of a custom type (if known).
	Elem *Type `msgpack:"elem,omitempty" json:"elem,omitempty"`
	// Fields are a struct's fields in encoding order.
	Fields []Field `msgpack:"fields,omitempty" json:"fields,omitempty"`
	// AsArray: the struct is encoded as an array of its field values, not a map.
	AsArray bool `msgpack:"as_array,omitempty" json:"as_array,omitempty"`
}

// Field is one field of a struct Type.
type Field struct {
	// Name is the key the field is encoded under: its msgpack tag name, else its Go name.
	Name string `msgpack:"name" json:"name"`
	// GoName is the Go field name, which JSON input may use instead of Name.
	GoName string `msgpack:"go,omitempty" json:"go_name,omitempty"`
	// OmitEmpty: the field is left out of the encoding when it has its zero value.
	OmitEmpty bool `msgpack:"omitempty,omitempty" json:"omitempty,omitempty"`
	// Type is the field's type.
	Type Type `msgpack:"type" json:"type"`
}

// Procedure is one entry of a node's procedure catalogue (OpProcedures).
type Procedure struct {
	// Name is the name the procedure is invoked by.
	Name string `msgpack:"name" json:"name"`
	// Doc is its one-line description.
	Doc string `msgpack:"doc,omitempty" json:"doc,omitempty"`
	// ReadOnly procedures never write.
	ReadOnly bool `msgpack:"ro,omitempty" json:"read_only"`
	// Multi procedures run as multi-partition inputs (a barrier).
	Multi bool `msgpack:"multi,omitempty" json:"multi"`
	// Args and Result describe the argument and result types.
	Args   Type `msgpack:"args" json:"args"`
	Result Type `msgpack:"result" json:"result"`
	// Version is the running version: the registration's (name@N) for compiled-in code,
	// the module's for a module's procedure. Origin says where the code comes from:
	// "binary", or "module NAME vN". Empty from a node that does not report them.
	Version uint32 `msgpack:"ver,omitempty" json:"version,omitempty"`
	Origin  string `msgpack:"origin,omitempty" json:"origin,omitempty"`
}
