package client

// This test alone imports package procedures (test-only: the library itself depends on the
// wire protocol only), to prove that the client's mirrors of the built-ins' argument and
// result types encode exactly like the originals.

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/lockstepdb/lockstep/procedures"
	"github.com/vmihailenco/msgpack/v5"
)

// roundTrip encodes from with msgpack and decodes it strictly into a new value of to's
// type, as the servers decode arguments.
func strictRoundTrip(t *testing.T, from, to any) any {
	t.Helper()
	b, err := msgpack.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	dst := reflect.New(reflect.TypeOf(to))
	dec := msgpack.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields(true)
	if err := dec.Decode(dst.Interface()); err != nil {
		t.Fatalf("%T → %T: %v", from, to, err)
	}
	return dst.Elem().Interface()
}

func TestBuiltinMirrors(t *testing.T) {
	tests := []struct {
		client, server any // the same value as each side's type
	}{
		{kvPutArgs{Value: []byte("v")}, procedures.KVPutArgs{Value: []byte("v")}},
		{kvGetResult{Value: []byte("v"), Found: true}, procedures.KVGetResult{Value: []byte("v"), Found: true}},
		{KVCasArgs{Old: []byte("o"), OldAbsent: true, New: []byte("n")}, procedures.KVCasArgs{Old: []byte("o"), OldAbsent: true, New: []byte("n")}},
		{KVCasResult{Swapped: true, Found: true, Current: []byte("c")}, procedures.KVCasResult{Swapped: true, Found: true, Current: []byte("c")}},
		{counterAddArgs{Delta: -3}, procedures.CounterAddArgs{Delta: -3}},
		{bankOpenArgs{Balance: 100}, procedures.BankOpenArgs{Balance: 100}},
		{bankTransferArgs{From: "a", To: "b", Amount: 7}, procedures.BankTransferArgs{From: "a", To: "b", Amount: 7}},
		{BankTransferResult{FromBalance: 1, ToBalance: 2}, procedures.BankTransferResult{FromBalance: 1, ToBalance: 2}},
		{BankTotalResult{Total: 10, Accounts: 3}, procedures.BankTotal{Total: 10, Accounts: 3}},
		{voterInitArgs{Contestants: []string{"x", "y"}, MaxVotesPerPhone: 3}, procedures.VoterInitArgs{Contestants: []string{"x", "y"}, MaxVotesPerPhone: 3}},
		{voteArgs{Contestant: 2}, procedures.VoteArgs{Contestant: 2}},
		{VoteOverLimit, procedures.VoteOverLimit},
		{[]ContestantTotal{{Contestant: 1, Name: "x", Votes: 5}}, []procedures.ContestantTotal{{Contestant: 1, Name: "x", Votes: 5}}},
		{voterAreaTotalsArgs{AreaCode: "212"}, procedures.VoterAreaTotalsArgs{AreaCode: "212"}},
		{[]AreaTotal{{AreaCode: "212", Contestant: 1, Votes: 5}}, []procedures.AreaTotal{{AreaCode: "212", Contestant: 1, Votes: 5}}},
		{streamAppendArgs{Stream: "s", Record: []byte("r")}, procedures.StreamAppendArgs{Stream: "s", Record: []byte("r")}},
	}
	for i, tt := range tests {
		if got := strictRoundTrip(t, tt.client, tt.server); !reflect.DeepEqual(got, tt.server) {
			t.Errorf("#%d: client → server: got %#v, want %#v", i, got, tt.server)
		}
		if got := strictRoundTrip(t, tt.server, tt.client); !reflect.DeepEqual(got, tt.client) {
			t.Errorf("#%d: server → client: got %#v, want %#v", i, got, tt.client)
		}
		cs, ss := reflect.TypeOf(tt.client), reflect.TypeOf(tt.server)
		if cs.Kind() == reflect.Struct && cs.NumField() != ss.NumField() {
			t.Errorf("#%d: %v has %d fields, %v has %d", i, cs, cs.NumField(), ss, ss.NumField())
		}
	}
	for _, v := range []VoteResult{VoteAccepted, VoteInvalidContestant, VoteOverLimit, 9} {
		if got, want := v.String(), procedures.VoteResult(v).String(); got != want {
			t.Errorf("VoteResult(%d): got %q, want %q", int(v), got, want)
		}
	}
}
