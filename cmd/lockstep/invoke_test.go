package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/procedures/builtin"
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
		{reflect.TypeFor[builtin.VoteResult](), "VoteResult (int)"},
		{reflect.TypeFor[uint64](), "uint64"},
	} {
		if got := typeShape(tc.typ); got != tc.want {
			t.Errorf("#%d: got %q, want %q", i, got, tc.want)
		}
	}
}
