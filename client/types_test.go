package client

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lockstepdb/lockstep/internal/testutil"
)

// TestStatusFromWireCoversEveryField checks that statusFromWire converts every field of a
// wire.Status, nested ones included, to the field of the same JSON name: a field added
// to the wire types without a line in the conversion (and a field in Status) fails it.
func TestStatusFromWireCoversEveryField(t *testing.T) {
	checkConvertsEveryField(t, statusFromWire, "Status")
}

// checkConvertsEveryField fills every field of a W, converts it with conv, and fails t
// unless the result marshals to the same JSON as the input and no field of it (named
// name) is left zero: each comes from the wire.
func checkConvertsEveryField[W, C any](t *testing.T, conv func(*W) C, name string) {
	t.Helper()
	var w W
	testutil.Fill(&w)
	got, err := json.Marshal(conv(&w))
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(&w)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("converted %s\n got %s\nwant %s", name, got, want)
	}
	checkFilled(t, reflect.ValueOf(conv(&w)), name)
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
