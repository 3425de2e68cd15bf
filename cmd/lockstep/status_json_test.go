package main

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/node"
)

// fill sets every field v reaches to a non-zero value that depends only on its position
// (a slice gets two elements), counting from *n.
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

// TestStatusJSONKeys checks that the CLI's JSON form of a client.Status is, key for key
// and in the same order, the node's /status JSON (node.StatusJSON) of the same wire
// status: `cluster status --output json` prints what it printed when it used the latter.
func TestStatusJSONKeys(t *testing.T) {
	var w wire.Status
	var c client.Status
	n, m := 0, 0
	fill(reflect.ValueOf(&w).Elem(), &n)
	fill(reflect.ValueOf(&c).Elem(), &m)
	want, err := json.Marshal(node.NewStatusJSON(w))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(newStatusJSON(c))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("cluster status JSON\n got %s\nwant %s", got, want)
	}
	// A node that did not answer: only its address.
	want, _ = json.Marshal(node.StatusJSON{Status: wire.Status{ClientAddr: "a:1"}})
	got, _ = json.Marshal(statusJSON{Status: client.Status{ClientAddr: "a:1"}})
	if string(got) != string(want) {
		t.Fatalf("unreachable row JSON\n got %s\nwant %s", got, want)
	}
}
