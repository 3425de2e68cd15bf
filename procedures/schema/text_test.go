package schema

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// TestShape: a type's shape names its fields by Go name with their types, bytes as
// base64, named basic types with their kind.
func TestShape(t *testing.T) {
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
		shape := Of(tc.typ)
		if got := shape.Shape(); got != tc.want {
			t.Errorf("#%d: got %q, want %q", i, got, tc.want)
		}
	}
	if got := (*Type)(nil).GoText(); got != "?" {
		t.Errorf("nil type: got %q, want ?", got)
	}
}

// TestZeroJSON: the skeleton of a type is the JSON encoding/json makes of its zero value
// (fixed-size bytes aside: those are base64 text, as the encoder takes them).
func TestZeroJSON(t *testing.T) {
	for i, typ := range []reflect.Type{
		reflect.TypeFor[builtin.NoArgs](), reflect.TypeFor[builtin.CounterAddArgs](), reflect.TypeFor[builtin.KVCasArgs](),
		reflect.TypeFor[builtin.VoterInitArgs](), reflect.TypeFor[builtin.VoteArgs](),
		reflect.TypeFor[[2]builtin.VoteArgs](), reflect.TypeFor[bool](), reflect.TypeFor[string](),
	} {
		shape := Of(typ)
		got, _ := json.Marshal(shape.ZeroJSON())
		want, _ := json.Marshal(reflect.Zero(typ).Interface())
		if string(got) != string(want) {
			t.Errorf("#%d %v: got %s, want %s", i, typ, got, want)
		}
	}
}
