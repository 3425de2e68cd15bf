package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// TestDecodeJSON checks that a result decoded by its schema prints as encoding/json prints
// the Go value: Go field names, field order, bytes as base64.
func TestDecodeJSON(t *testing.T) {
	for i, v := range []any{
		builtin.KVGetResult{Value: []byte{0, 1, 2}, Found: true},
		builtin.KVCasResult{Swapped: false, Found: true, Current: []byte("cur")},
		builtin.BankTransferResult{FromBalance: 1, ToBalance: -2},
		[]builtin.ContestantTotal{{Contestant: 1, Name: "Alice", Votes: 1 << 40}, {Contestant: 2, Name: "Bob"}},
		builtin.VoteResult(2),
		int64(-7),
		uint64(1<<64 - 1),
		list{Head: 1, Tail: &list{Head: 2}},
		arrayStruct{X: 3, Y: 4},
		embeds{Inner: Inner{I: 5}, N: "n"},
		map[string]int64{"b": 2, "a": 1},
		[]*Inner{{I: 1}, nil},
	} {
		typ := Of(reflect.TypeOf(v))
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeJSON(&typ, b)
		if err != nil {
			t.Errorf("#%d: %v", i, err)
			continue
		}
		gotJSON, err := json.Marshal(got)
		if err != nil {
			t.Errorf("#%d: %v", i, err)
			continue
		}
		wantJSON, _ := json.Marshal(v)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("#%d: got %s, want %s", i, gotJSON, wantJSON)
		}
	}
}

// TestDecodeJSONTolerant checks what a value that does not fit its schema gives: its
// generic decoding, with fields the schema does not know after those it does.
func TestDecodeJSONTolerant(t *testing.T) {
	typ := Of(reflect.TypeFor[builtin.KVGetResult]())
	for i, tc := range []struct {
		v    any
		want string
	}{
		{map[string]any{"zz": 1, "f": true, "aa": "x"}, `{"Found":true,"aa":"x","zz":1}`},
		{map[int]string{1: "a"}, `{"1":"a"}`},
		{[]any{1}, `[1]`},
		{"text", `"text"`},
	} {
		b, _ := msgpack.Marshal(tc.v)
		got, err := DecodeJSON(&typ, b)
		if err != nil {
			t.Errorf("#%d: %v", i, err)
			continue
		}
		if out, _ := json.Marshal(got); string(out) != tc.want {
			t.Errorf("#%d: got %s, want %s", i, out, tc.want)
		}
	}
	for i, bad := range [][]byte{{}, {0xc1}, {0x01, 0x02}, {0x92, 0x01}} {
		if _, err := DecodeJSON(&typ, bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("bad #%d: got %v, want %v", i, err, ErrMalformed)
		}
	}
}
