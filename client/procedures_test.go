package client

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/lockstepdb/lockstep/procedures/schema"
)

// TestProcedureFromWireCoversEveryField checks that procedureFromWire carries every field
// of a catalogue entry to the field of the same name.
func TestProcedureFromWireCoversEveryField(t *testing.T) {
	var w schema.Procedure
	wp := reflect.ValueOf(&w).Elem()
	for i := range wp.NumField() {
		switch f := wp.Field(i); f.Kind() {
		case reflect.String:
			f.SetString("s" + strconv.Itoa(i))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Uint32:
			f.SetUint(uint64(i + 1))
		case reflect.Struct: // a schema.Type
			f.Set(reflect.ValueOf(schema.Type{Kind: schema.Kind("k" + strconv.Itoa(i))}))
		default:
			t.Fatalf("field %s of an unexpected kind", wp.Type().Field(i).Name)
		}
	}
	got := reflect.ValueOf(procedureFromWire(&w))
	wv := reflect.ValueOf(w)
	if got.NumField() != wv.NumField() {
		t.Fatalf("Procedure has %d fields, schema.Procedure %d", got.NumField(), wv.NumField())
	}
	for i := range wv.NumField() {
		name := wv.Type().Field(i).Name
		f := got.FieldByName(name)
		if !f.IsValid() || !reflect.DeepEqual(f.Interface(), wv.Field(i).Interface()) {
			t.Errorf("%s: got %v, want %v", name, f, wv.Field(i))
		}
	}
}
