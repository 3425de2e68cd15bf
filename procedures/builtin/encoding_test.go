package builtin

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestEncodingUnchanged pins the msgpack encoding of every argument and result type. The
// bytes were produced by the definitions these types replaced (package procedures before
// it shared them with the client): arguments are written into the replicated log, so a
// changed encoding would change what old logs replay to (DESIGN.md invariant 1). Each
// value must encode to its bytes, and the bytes must decode strictly (unknown fields
// refused, as the servers decode) back to the value.
func TestEncodingUnchanged(t *testing.T) {
	tests := []struct {
		v    any
		want string // hex
	}{
		{NoArgs{}, "80"},
		{KVPutArgs{Value: []byte("v")}, "81a176c40176"},
		{KVPutArgs{}, "81a176c0"},
		{KVGetResult{Value: []byte("v"), Found: true}, "82a176c40176a166c3"},
		{KVCasArgs{Old: []byte("o"), OldAbsent: true, New: []byte("n")}, "83a16fc4016fa26f61c3a16ec4016e"},
		{KVCasResult{Swapped: true, Found: true, Current: []byte("c")}, "83a173c3a166c3a163c40163"},
		{KVCasResult{}, "83a173c2a166c2a163c0"},
		{CounterAddArgs{Delta: -3}, "81a164d3fffffffffffffffd"},
		{BankOpenArgs{Balance: 100}, "81a162d30000000000000064"},
		{BankTransferArgs{From: "a", To: "b", Amount: 7}, "83a166a161a174a162a161d30000000000000007"},
		{BankTransferResult{FromBalance: 1, ToBalance: 2}, "82a26662d30000000000000001a27462d30000000000000002"},
		{BankTotalResult{Total: 10, Accounts: 3}, "82a174d3000000000000000aa16ed30000000000000003"},
		{VoterInitArgs{Contestants: []string{"x", "y"}, MaxVotesPerPhone: 3}, "82a16392a178a179a16dd30000000000000003"},
		{VoteArgs{Contestant: 2}, "81a163d200000002"},
		{VoteArgs{Contestant: -1 << 31}, "81a163d280000000"},
		{VoteOverLimit, "02"},
		{[]ContestantTotal{{Contestant: 1, Name: "x", Votes: 5}}, "9183a163d200000001a16ea178a176d30000000000000005"},
		{VoterAreaTotalsArgs{AreaCode: "212"}, "81a161a3323132"},
		{[]AreaTotal{{AreaCode: "212", Contestant: 1, Votes: 5}}, "9183a161a3323132a163d200000001a176d30000000000000005"},
		{StreamAppendArgs{Stream: "s", Record: []byte("r")}, "82a173a173a172c40172"},
	}
	for i, tt := range tests {
		b, err := msgpack.Marshal(tt.v)
		if err != nil {
			t.Fatalf("#%d: %T: %v", i, tt.v, err)
		}
		if got := hex.EncodeToString(b); got != tt.want {
			t.Errorf("#%d: %T encodes to %s, want %s", i, tt.v, got, tt.want)
		}
		want, _ := hex.DecodeString(tt.want)
		dst := reflect.New(reflect.TypeOf(tt.v))
		dec := msgpack.NewDecoder(bytes.NewReader(want))
		dec.DisallowUnknownFields(true)
		if err := dec.Decode(dst.Interface()); err != nil {
			t.Errorf("#%d: %s into %T: %v", i, tt.want, tt.v, err)
		} else if got := dst.Elem().Interface(); !reflect.DeepEqual(got, tt.v) {
			t.Errorf("#%d: %s decodes to %#v, want %#v", i, tt.want, got, tt.v)
		}
	}
}

// TestVoteArgsDecode checks VoteArgs' own decoder: it accepts what the generic struct
// decoder accepts and refuses a contestant outside int32 and unknown fields (DESIGN.md
// invariant 7).
func TestVoteArgsDecode(t *testing.T) {
	tests := []struct {
		in      string // hex
		want    VoteArgs
		wantErr bool
	}{
		{"81a163d200000002", VoteArgs{Contestant: 2}, false},
		{"81a16307", VoteArgs{Contestant: 7}, false},
		{"9107", VoteArgs{Contestant: 7}, false},
		{"90", VoteArgs{}, false},
		{"80", VoteArgs{}, false},
		{"c0", VoteArgs{}, false},
		{"81a163cf0000000100000000", VoteArgs{}, true}, // 1<<32
		{"81a163d3ffffffff7fffffff", VoteArgs{}, true}, // -1<<31 - 1
		{"81a178d200000002", VoteArgs{}, true},         // unknown field "x"
		{"920102", VoteArgs{}, true},                   // two elements
	}
	for i, tt := range tests {
		b, _ := hex.DecodeString(tt.in)
		var got VoteArgs
		err := msgpack.Unmarshal(b, &got)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("#%d: %s: got %+v, %v, want %+v, error %t", i, tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestVoteResultString(t *testing.T) {
	tests := []struct {
		v    VoteResult
		want string
	}{
		{VoteAccepted, "accepted"},
		{VoteInvalidContestant, "invalid contestant"},
		{VoteOverLimit, "over limit"},
		{9, "VoteResult(9)"},
		{-1, "VoteResult(-1)"},
	}
	for i, tt := range tests {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("#%d: got %q, want %q", i, got, tt.want)
		}
	}
}
