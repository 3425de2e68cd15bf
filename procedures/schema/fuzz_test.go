package schema

import (
	"errors"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// fuzzTypes are the schemas the fuzz targets read and write values of.
var fuzzTypes = []Type{Of(reflect.TypeFor[tagged]()), Of(reflect.TypeFor[tree]()), Of(reflect.TypeFor[withMaps]()), {Kind: KindAny}}

// FuzzDecodeJSON feeds arbitrary bytes, as a node's result, to DecodeJSON: it must not
// panic, and fails only with ErrMalformed.
func FuzzDecodeJSON(f *testing.F) {
	for _, v := range []any{tagged{A: 1, ByID: map[uint32]*tagged{1: {B: "x"}}}, tree{Kids: []tree{{Value: 1}}}, []any{1, "x"}} {
		b, _ := msgpack.Marshal(v)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for i := range fuzzTypes {
			if _, err := DecodeJSON(&fuzzTypes[i], data); err != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("got %v, want nil or %v", err, ErrMalformed)
			}
		}
	})
}

// FuzzEncodeJSON feeds arbitrary text, as --args, to EncodeJSON: it must not panic, and
// what it encodes is one msgpack value.
func FuzzEncodeJSON(f *testing.F) {
	for _, s := range []string{`{"A": 1, "ByID": {"2": {"a": 3}}}`, `{"Kids": [{"v": 1}], "Next": {"Next": null}}`, `{"Pairs": [1, 2]}`, `[1, {"x": 2.5}]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for i := range fuzzTypes {
			b, err := EncodeJSON(&fuzzTypes[i], []byte(text))
			if err != nil {
				continue
			}
			if _, err := DecodeJSON(&Type{Kind: KindAny}, b); err != nil {
				t.Fatalf("%q encoded to %x, not msgpack: %v", text, b, err)
			}
		}
	})
}
