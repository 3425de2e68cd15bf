package invoke

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/procedures/schema"
	"github.com/vmihailenco/msgpack/v5"
)

// TestEncodeArgs: --args is encoded by the argument schema into the bytes a Go client
// would send for the same value, fields by Go or wire name; bad arguments are a typed
// error naming the fault, and nothing is built.
func TestEncodeArgs(t *testing.T) {
	for i, tc := range []struct {
		typ  reflect.Type
		json string
		want any   // the value a Go client would send, when no error
		err  error // the schema error, else nil
		text string
	}{
		{typ: reflect.TypeFor[builtin.CounterAddArgs](), json: `{"Delta": 5}`, want: builtin.CounterAddArgs{Delta: 5}},
		{typ: reflect.TypeFor[builtin.CounterAddArgs](), json: `{"delta": -5}`, want: builtin.CounterAddArgs{Delta: -5}},
		{typ: reflect.TypeFor[builtin.CounterAddArgs](), json: `{"d": 7}`, want: builtin.CounterAddArgs{Delta: 7}},
		{typ: reflect.TypeFor[builtin.VoterInitArgs](), json: `{"c": ["a", "b"], "m": 3}`, want: builtin.VoterInitArgs{Contestants: []string{"a", "b"}, MaxVotesPerPhone: 3}},
		{typ: reflect.TypeFor[builtin.KVPutArgs](), json: `{"Value": "aGk="}`, want: builtin.KVPutArgs{Value: []byte("hi")}},
		{typ: reflect.TypeFor[builtin.KVCasArgs](), json: `{"oa": true, "n": "aGk="}`, want: builtin.KVCasArgs{OldAbsent: true, New: []byte("hi")}},
		{typ: reflect.TypeFor[builtin.NoArgs](), json: `{}`, want: builtin.NoArgs{}},
		{typ: reflect.TypeFor[int64](), json: `42`, want: int64(42)},
		{typ: reflect.TypeFor[builtin.NoArgs](), json: `{"x": 1}`, err: schema.ErrUnknownField, text: `"x"`},
		{typ: reflect.TypeFor[builtin.CounterAddArgs](), json: `{"Delta": "5"}`, err: schema.ErrWrongType},
		{typ: reflect.TypeFor[builtin.CounterAddArgs](), json: `{"Delta": 1.5}`, err: schema.ErrOutOfRange, text: "1.5"},
		{typ: reflect.TypeFor[builtin.CounterAddArgs](), json: `{"Delta": 1} {}`, text: "not valid JSON"},
		{typ: reflect.TypeFor[builtin.CounterAddArgs](), json: `{"Delta": `, text: "not valid JSON"},
		{typ: reflect.TypeFor[builtin.CounterAddArgs](), json: `[1]`, err: schema.ErrWrongType},
		{typ: reflect.TypeFor[builtin.VoteArgs](), json: `{"Contestant": 4294967296}`, err: schema.ErrOutOfRange},
		{typ: reflect.TypeFor[builtin.KVPutArgs](), json: `{"Value": "not base64!"}`, err: schema.ErrWrongType},
		{typ: reflect.TypeFor[builtin.CounterAddArgs](), json: `{"Delta": 1, "d": 2}`, err: schema.ErrDuplicateField},
	} {
		shape := schema.Of(tc.typ)
		got, err := EncodeArgs(&shape, tc.json)
		if tc.err != nil || tc.text != "" {
			if err == nil || tc.err != nil && !errors.Is(err, tc.err) || !strings.Contains(err.Error(), "--args") || !strings.Contains(err.Error(), tc.text) || got != nil {
				t.Errorf("#%d: got %v, %v; want an --args error wrapping %v with %q", i, got, err, tc.err, tc.text)
			}
			continue
		}
		if err != nil {
			t.Errorf("#%d: %v", i, err)
			continue
		}
		// What is sent decodes to the value a Go client would send.
		v := reflect.New(tc.typ)
		if err := msgpack.Unmarshal(got.(msgpack.RawMessage), v.Interface()); err != nil || !reflect.DeepEqual(v.Elem().Interface(), tc.want) {
			t.Errorf("#%d: sent %x = %#v (%v), want %#v", i, got, v.Elem().Interface(), err, tc.want)
		}
	}
	shape := schema.Of(reflect.TypeFor[builtin.CounterAddArgs]())
	if got, err := EncodeArgs(&shape, "  "); got != nil || err != nil {
		t.Errorf("no --args: got %v, %v; want nil, nil", got, err)
	}
}

// TestBuiltinSkeletons: for every built-in, the --args skeleton that "lockstep
// procedures" shows is the JSON of the argument type's zero value and encodes to it.
func TestBuiltinSkeletons(t *testing.T) {
	for i, info := range procedures.Builtins().List() {
		shape := schema.Of(info.Args)
		b, err := json.Marshal(shape.ZeroJSON())
		if err != nil {
			t.Fatalf("#%d %s: %v", i, info.Name, err)
		}
		skeleton := string(b)
		raw, err := EncodeArgs(&shape, skeleton)
		if err != nil {
			t.Fatalf("#%d %s: skeleton %s: %v", i, info.Name, skeleton, err)
		}
		v := reflect.New(info.Args)
		if err := msgpack.Unmarshal(raw.(msgpack.RawMessage), v.Interface()); err != nil {
			t.Fatalf("#%d %s: %v", i, info.Name, err)
		}
		if zero := reflect.Zero(info.Args).Interface(); !reflect.DeepEqual(v.Elem().Interface(), zero) {
			t.Errorf("#%d %s: skeleton %s sends %+v, want the zero value %+v", i, info.Name, skeleton, v.Elem(), zero)
		}
	}
}
