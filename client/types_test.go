package client

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// fill sets every field v reaches to a distinct non-zero value (a slice gets two
// elements), counting from *n.
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

// TestStatusFromWireCoversEveryField checks that statusFromWire converts every field of a
// wire.Status, nested ones included, to the field of the same JSON name: a field added
// to the wire types without a line in the conversion (and a field in Status) fails it.
func TestStatusFromWireCoversEveryField(t *testing.T) {
	var w wire.Status
	n := 0
	fill(reflect.ValueOf(&w).Elem(), &n)
	got, err := json.Marshal(statusFromWire(&w))
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(&w)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("converted status\n got %s\nwant %s", got, want)
	}
	// And no field of Status is left zero: each comes from the wire.
	checkFilled(t, reflect.ValueOf(statusFromWire(&w)), "Status")
}

// checkFilled fails t for every field v reaches that is zero (or an empty slice).
func checkFilled(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			checkFilled(t, v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	case reflect.Slice:
		if v.Len() == 0 {
			t.Errorf("%s is empty", path)
		}
		for i := range v.Len() {
			checkFilled(t, v.Index(i), path)
		}
	default:
		if v.IsZero() {
			t.Errorf("%s is zero", path)
		}
	}
}
