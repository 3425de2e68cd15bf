package schema

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

type withMaps struct {
	ByID  map[uint32]string `msgpack:"ids"`
	Flags map[bool]int8     `msgpack:"fl"`
	Ratio float32           `msgpack:"r"`
	Fixed [2]byte           `msgpack:"x"`
	Pairs [2]int8           `msgpack:"p"`
	Any   any               `msgpack:"any"`
}

// TestEncodeJSON checks that the bytes EncodeJSON builds decode, with msgpack's strict
// decoder, into the value the JSON means: the schema follows msgpack's own rules.
func TestEncodeJSON(t *testing.T) {
	u := uint16(7)
	for i, tc := range []struct {
		typ  reflect.Type
		json string
		want any
	}{
		{reflect.TypeFor[builtin.CounterAddArgs](), `{"Delta": 5}`, builtin.CounterAddArgs{Delta: 5}},
		{reflect.TypeFor[builtin.CounterAddArgs](), `{"delta": -5}`, builtin.CounterAddArgs{Delta: -5}},
		{reflect.TypeFor[builtin.CounterAddArgs](), `{"d": 7}`, builtin.CounterAddArgs{Delta: 7}},
		{reflect.TypeFor[builtin.CounterAddArgs](), `{}`, builtin.CounterAddArgs{}},
		{reflect.TypeFor[builtin.VoterInitArgs](), `{"c": ["a", "b"], "MaxVotesPerPhone": 3}`, builtin.VoterInitArgs{Contestants: []string{"a", "b"}, MaxVotesPerPhone: 3}},
		{reflect.TypeFor[builtin.KVCasArgs](), `{"oa": true, "New": "aGk=", "Old": null}`, builtin.KVCasArgs{OldAbsent: true, New: []byte("hi")}},
		{reflect.TypeFor[builtin.VoteArgs](), `{"Contestant": 2147483647}`, builtin.VoteArgs{Contestant: 1<<31 - 1}},
		{reflect.TypeFor[builtin.BankTransferArgs](), `{"From": "a", "t": "b", "Amount": -9223372036854775808}`, builtin.BankTransferArgs{From: "a", To: "b", Amount: -1 << 63}},
		{reflect.TypeFor[int64](), `42`, int64(42)},
		{reflect.TypeFor[uint64](), `18446744073709551615`, uint64(1<<64 - 1)},
		{reflect.TypeFor[tagged](), `{"A": 1, "B": "x", "Opt": 7, "Floats": [1.5, 2], "ByName": {"k": "AQI="}, "ByID": {"3": {"a": 4}}}`,
			tagged{A: 1, B: "x", Opt: &u, Floats: []float32{1.5, 2}, ByName: map[string][]byte{"k": {1, 2}}, ByID: map[uint32]*tagged{3: {A: 4}}}},
		{reflect.TypeFor[withMaps](), `{"ByID": {"1": "one"}, "Flags": {"true": -1}, "Ratio": 0.25, "Fixed": "AQI=", "Pairs": [1, -1], "Any": {"k": [1, "s", 2.5, null]}}`,
			withMaps{ByID: map[uint32]string{1: "one"}, Flags: map[bool]int8{true: -1}, Ratio: 0.25, Fixed: [2]byte{1, 2}, Pairs: [2]int8{1, -1},
				Any: map[string]any{"k": []any{int8(1), "s", 2.5, nil}}}},
		{reflect.TypeFor[arrayStruct](), `{"X": 1, "Y": 2}`, arrayStruct{X: 1, Y: 2}},
		{reflect.TypeFor[embeds](), `{"I": 1, "n": "x"}`, embeds{Inner: Inner{I: 1}, N: "x"}},
		{reflect.TypeFor[list](), `{"Head": 1, "Tail": {"h": 2, "Tail": null}}`, list{Head: 1, Tail: &list{Head: 2}}},
		{reflect.TypeFor[*list](), `null`, (*list)(nil)},
	} {
		typ := Of(tc.typ)
		b, err := EncodeJSON(&typ, []byte(tc.json))
		if err != nil {
			t.Errorf("#%d: %v", i, err)
			continue
		}
		got := reflect.New(tc.typ)
		dec := msgpack.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields(true)
		if err := dec.Decode(got.Interface()); err != nil {
			t.Errorf("#%d: %x does not decode: %v", i, b, err)
			continue
		}
		if !reflect.DeepEqual(got.Elem().Interface(), tc.want) {
			t.Errorf("#%d: got %#v, want %#v", i, got.Elem().Interface(), tc.want)
		}
	}
}

// TestEncodeJSONErrors checks that bad input gets a typed error naming what is wrong
// (DESIGN.md invariant 7: a clear error to the sender).
func TestEncodeJSONErrors(t *testing.T) {
	for i, tc := range []struct {
		typ  reflect.Type
		json string
		err  error
		msg  string // a part of the message
	}{
		{reflect.TypeFor[builtin.CounterAddArgs](), `{"Delta": 1, "x": 2}`, ErrUnknownField, `"x"; the fields are "Delta" (or "d")`},
		{reflect.TypeFor[builtin.NoArgs](), `{"x": 1}`, ErrUnknownField, `the fields are none`},
		{reflect.TypeFor[builtin.CounterAddArgs](), `{"Delta": 1, "d": 2}`, ErrDuplicateField, `Delta, as "Delta" and as "d"`},
		{reflect.TypeFor[builtin.CounterAddArgs](), `{"Delta": "5"}`, ErrWrongType, `.Delta: wrong type: want a number, got a string`},
		{reflect.TypeFor[builtin.CounterAddArgs](), `{"Delta": 1.5}`, ErrOutOfRange, `.Delta: out of range: want an integer of 64 bits, got 1.5`},
		{reflect.TypeFor[builtin.CounterAddArgs](), `[1]`, ErrWrongType, `the value: wrong type: want an object, got an array`},
		{reflect.TypeFor[builtin.CounterAddArgs](), `{"Delta": 1} {}`, ErrWrongType, `not one JSON value`},
		{reflect.TypeFor[builtin.CounterAddArgs](), `{"Delta": `, ErrWrongType, `not JSON`},
		{reflect.TypeFor[builtin.VoteArgs](), `{"Contestant": 2147483648}`, ErrOutOfRange, `.Contestant: out of range: want an integer of 32 bits`},
		{reflect.TypeFor[uint64](), `-1`, ErrOutOfRange, `unsigned`},
		{reflect.TypeFor[builtin.KVPutArgs](), `{"Value": "not base64!"}`, ErrWrongType, `.Value: wrong type: want a base64 string`},
		{reflect.TypeFor[builtin.VoterInitArgs](), `{"c": ["a", 2]}`, ErrWrongType, `.Contestants[1]: wrong type: want a string, got a number`},
		{reflect.TypeFor[tagged](), `{"ByID": {"x": {}}}`, ErrOutOfRange, `.ByID["x"] (key)`},
		{reflect.TypeFor[tagged](), `{"ByID": {"1": {"zz": 1}}}`, ErrUnknownField, `.ByID["1"].zz`[:9]},
		{reflect.TypeFor[withMaps](), `{"Pairs": [1]}`, ErrOutOfRange, `exactly 2 elements`},
		{reflect.TypeFor[withMaps](), `{"Fixed": "AQ=="}`, ErrOutOfRange, `exactly 2 bytes`},
		{reflect.TypeFor[withMaps](), `{"Ratio": 1e39}`, ErrOutOfRange, `32-bit float`},
		{reflect.TypeFor[encodesItself](), `{"X": 1}`, ErrNotEncodable, `schema.encodesItself`},
		{reflect.TypeFor[chan int](), `1`, ErrNotEncodable, `unsupported`},
		{reflect.TypeFor[list](), `{"Tail": {"Tail": {"Head": true}}}`, ErrWrongType, `.Tail.Tail.Head: wrong type`},
	} {
		typ := Of(tc.typ)
		_, err := EncodeJSON(&typ, []byte(tc.json))
		if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("#%d: got %v, want %v with %q", i, err, tc.err, tc.msg)
		}
	}
	// A schema that is not well formed is an error, not a panic.
	for i, bad := range []Type{
		{Kind: KindRef, Name: "nowhere"},
		{Kind: KindSlice},
		{Kind: KindMap, Elem: &Type{Kind: KindInt}},
	} {
		if _, err := EncodeJSON(&bad, []byte(`[1]`)); err == nil {
			t.Errorf("bad #%d: got no error", i)
		}
	}
}
