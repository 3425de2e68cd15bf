package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/procedures/schema"
	"github.com/vmihailenco/msgpack/v5"
)

func TestDecodeArgs(t *testing.T) {
	for i, tc := range []struct {
		typ  reflect.Type
		json string
		want any    // the decoded value, when no error
		err  string // a part of the error, else ""
	}{
		{reflect.TypeFor[builtin.CounterAddArgs](), `{"Delta": 5}`, builtin.CounterAddArgs{Delta: 5}, ""},
		{reflect.TypeFor[builtin.CounterAddArgs](), `{"delta": -5}`, builtin.CounterAddArgs{Delta: -5}, ""},
		{reflect.TypeFor[builtin.CounterAddArgs](), `{"d": 7}`, builtin.CounterAddArgs{Delta: 7}, ""},
		{reflect.TypeFor[builtin.VoterInitArgs](), `{"c": ["a", "b"], "m": 3}`, builtin.VoterInitArgs{Contestants: []string{"a", "b"}, MaxVotesPerPhone: 3}, ""},
		{reflect.TypeFor[builtin.KVPutArgs](), `{"Value": "aGk="}`, builtin.KVPutArgs{Value: []byte("hi")}, ""},
		{reflect.TypeFor[builtin.KVCasArgs](), `{"oa": true, "n": "aGk="}`, builtin.KVCasArgs{OldAbsent: true, New: []byte("hi")}, ""},
		{reflect.TypeFor[builtin.NoArgs](), `{}`, builtin.NoArgs{}, ""},
		{reflect.TypeFor[builtin.NoArgs](), `{"x": 1}`, nil, `unknown field "x"`},
		{reflect.TypeFor[builtin.CounterAddArgs](), `{"Delta": "5"}`, nil, "cannot unmarshal string"},
		{reflect.TypeFor[builtin.CounterAddArgs](), `{"Delta": 1.5}`, nil, "cannot unmarshal number 1.5"},
		{reflect.TypeFor[builtin.CounterAddArgs](), `{"Delta": 1} {}`, nil, "not valid JSON"},
		{reflect.TypeFor[builtin.CounterAddArgs](), `[1]`, nil, "cannot unmarshal array"},
		{reflect.TypeFor[builtin.VoteArgs](), `{"Contestant": 4294967296}`, nil, "int32"},
		{reflect.TypeFor[builtin.KVPutArgs](), `{"Value": "not base64!"}`, nil, "illegal base64"},
		{reflect.TypeFor[int64](), `42`, int64(42), ""},
	} {
		got, err := decodeArgs(tc.typ, tc.json)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("#%d: got %v, want an error with %q", i, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("#%d: %v", i, err)
			continue
		}
		if v := reflect.ValueOf(got).Elem().Interface(); !reflect.DeepEqual(v, tc.want) {
			t.Errorf("#%d: got %#v, want %#v", i, v, tc.want)
		}
		// What is sent is what a Go client would send for the same value.
		gotWire, _ := msgpack.Marshal(got)
		wantWire, _ := msgpack.Marshal(tc.want)
		if string(gotWire) != string(wantWire) {
			t.Errorf("#%d: msgpack %x, want %x", i, gotWire, wantWire)
		}
	}
	if got, err := decodeArgs(reflect.TypeFor[builtin.CounterAddArgs](), "  "); got != nil || err != nil {
		t.Errorf("no --args: got %v, %v; want nil, nil", got, err)
	}
}

func TestTypeShape(t *testing.T) {
	for i, tc := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[builtin.NoArgs](), "none"},
		{reflect.TypeFor[builtin.CounterAddArgs](), "CounterAddArgs{Delta int64}"},
		{reflect.TypeFor[builtin.KVPutArgs](), "KVPutArgs{Value []byte (base64)}"},
		{reflect.TypeFor[[]builtin.ContestantTotal](), "[]ContestantTotal{Contestant int32, Name string, Votes int64}"},
		{reflect.TypeFor[builtin.VoteResult](), "VoteResult (int64)"},
		{reflect.TypeFor[builtin.VoteArgs](), "VoteArgs{Contestant int32}"},
		{reflect.TypeFor[builtin.VoterInitArgs](), "VoterInitArgs{Contestants []string, MaxVotesPerPhone int64}"},
		{reflect.TypeFor[uint64](), "uint64"},
		{reflect.TypeFor[map[string]*int32](), "map[string]*int32"},
		{reflect.TypeFor[[3]byte](), "[3]byte"},
	} {
		shape := schema.Of(tc.typ)
		if got := typeShape(&shape); got != tc.want {
			t.Errorf("#%d: got %q, want %q", i, got, tc.want)
		}
	}
}

// TestSchemaPathMatchesTypedPath checks, for every built-in, that the schema path of a
// procedure the binary does not know agrees with the typed path of one it knows: the
// --args skeleton is the JSON of the zero value, and JSON arguments encode to msgpack that
// decodes to the same value.
func TestSchemaPathMatchesTypedPath(t *testing.T) {
	for i, info := range procedures.Builtins().List() {
		shape := schema.Of(info.Args)
		got, _ := json.Marshal(zeroJSON(&shape))
		want, _ := json.Marshal(reflect.Zero(info.Args).Interface())
		if string(got) != string(want) {
			t.Errorf("#%d %s: skeleton %s, want %s", i, info.Name, got, want)
		}
		// The skeleton itself, sent both ways, gives the same argument value.
		typed, err := decodeArgs(info.Args, string(want))
		if err != nil {
			t.Fatalf("#%d %s: %v", i, info.Name, err)
		}
		raw, err := encodeArgs(&shape, string(want))
		if err != nil {
			t.Fatalf("#%d %s: %v", i, info.Name, err)
		}
		v := reflect.New(info.Args)
		if err := msgpack.Unmarshal(raw.(msgpack.RawMessage), v.Interface()); err != nil {
			t.Fatalf("#%d %s: %v", i, info.Name, err)
		}
		if !reflect.DeepEqual(v.Interface(), typed) {
			t.Errorf("#%d %s: schema path %+v, typed path %+v", i, info.Name, v.Elem(), reflect.ValueOf(typed).Elem())
		}
	}
}
