package canon

import (
	"reflect"

	"github.com/vmihailenco/msgpack/v5"
)

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
