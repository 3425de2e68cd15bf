package testutil

import (
	"reflect"
	"strconv"
)

// Fill sets every field *p reaches to a distinct non-zero value that depends only on its
// position (counting fields in order from 1; a slice gets two elements), for a test that
// checks a conversion or an encoding carries every field. *p may hold strings, bools,
// integers, and slices and structs of them; any other kind panics.
func Fill(p any) {
	n := 0
	fill(reflect.ValueOf(p).Elem(), &n)
}

// fill is Fill of v, counting from *n.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + strconv.Itoa(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), n)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), n)
		}
	default:
		panic("fill: unexpected kind " + v.Kind().String())
	}
}
