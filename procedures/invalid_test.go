package procedures

import (
	"errors"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// TestInvalidInputs checks DESIGN.md invariant 7: malformed or misdirected inputs get a
// typed error and change nothing, and the engine keeps serving.
func TestInvalidInputs(t *testing.T) {
	te := newTestEngine(t, 4)
	seed(t, te)
	good := encode(t, builtin.CounterAddArgs{Delta: 1})
	tests := []struct {
		proc    string
		key     string
		args    []byte
		scope   []int
		wantErr error
	}{
		{proc: "no.such", key: "k", wantErr: ErrUnknownProcedure},
		{proc: "", key: "k", wantErr: ErrUnknownProcedure},
		{proc: "counter.add", key: "k", args: []byte{0xc1}, wantErr: ErrBadArguments},                        // never-used code
		{proc: "counter.add", key: "k", args: good[:len(good)-1], wantErr: ErrBadArguments},                  // truncated
		{proc: "counter.add", key: "k", args: append(good, 0x01), wantErr: ErrBadArguments},                  // trailing bytes
		{proc: "counter.add", key: "k", args: encode(t, map[string]any{"d": "x"}), wantErr: ErrBadArguments}, // wrong type
		{proc: "counter.add", key: "k", args: encode(t, map[string]any{"x": 1}), wantErr: ErrBadArguments},   // unknown field
		{proc: "counter.add", key: "k", args: encode(t, "str"), wantErr: ErrBadArguments},
		{proc: "kv.put", key: "k", args: encode(t, map[string]any{"v": 12}), wantErr: ErrBadArguments},
		{proc: "kv.get", key: "k", args: encode(t, map[string]any{"v": 1}), wantErr: ErrBadArguments},
		{proc: "kv.get", key: "k", args: encode(t, builtin.NoArgs{}), wantErr: nil},
		{proc: "voter.init", args: encode(t, map[string]any{"c": []int{1}}), wantErr: ErrBadArguments},
		{proc: "bank.transfer", args: encode(t, map[string]any{"a": 1.5}), wantErr: ErrBadArguments},
		{proc: "voter.vote", key: "5551234567", args: encode(t, map[string]any{"c": "1"}), wantErr: ErrBadArguments},
		{proc: "voter.vote", key: "5551234567", args: encode(t, map[string]any{"c": 1<<32 + 1}), wantErr: ErrBadArguments}, // no truncation
		{proc: "voter.vote", key: "5551234567", args: encode(t, map[string]any{"c": -1<<31 - 1}), wantErr: ErrBadArguments},
		{proc: "voter.vote", key: "5551234567", args: encode(t, map[string]any{"x": 1}), wantErr: ErrBadArguments},
		{proc: "voter.vote", key: "5551234567", args: encode(t, []int{1, 2}), wantErr: ErrBadArguments},
		{proc: "voter.vote", key: "5551234567", args: encode(t, []int{2}), wantErr: nil},                       // array form
		{proc: "voter.vote", key: "5551234567", args: encode(t, map[string]any{"c": 1<<31 - 1}), wantErr: nil}, // invalid contestant, an outcome
		// Wrong shape: a multi-partition procedure as a single-partition input, and back.
		{proc: "bank.total", key: "k", scope: []int{}, wantErr: partition.ErrBadScope},
		{proc: "bank.total", key: "k", scope: []int{0, 9}, wantErr: partition.ErrBadScope},
		{proc: "bank.total", key: "k", scope: []int{1, 0}, wantErr: partition.ErrBadScope},
		// Failing procedures.
		{proc: "kv.put", key: "", args: encode(t, builtin.KVPutArgs{}), wantErr: partition.ErrEmptyKey},
		{proc: "voter.vote", key: "555123456x", args: encode(t, builtin.VoteArgs{Contestant: 1}), wantErr: ErrBadPhoneNumber},
		{proc: "voter.init", args: encode(t, builtin.VoterInitArgs{Contestants: []string{"a"}}), wantErr: ErrVoterInitialised},
		{proc: "bank.transfer", args: encode(t, builtin.BankTransferArgs{From: "a0", To: "b0", Amount: 1 << 40}), wantErr: ErrInsufficientFunds},
	}
	for i, tt := range tests {
		before := te.snapshot(t)
		in := te.input(tt.proc, tt.key, tt.args, tt.scope)
		_, err := te.exec(in)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("#%d %s: got error %v, want %v", i, tt.proc, err, tt.wantErr)
		}
		if after := te.snapshot(t); err != nil && !after.same(before) {
			t.Errorf("#%d %s: failed input changed state: got %v, want %v", i, tt.proc, after.hashes, before.hashes)
		}
	}
	// Wrong shape through the registry: a single-partition procedure run with a scope.
	in := te.input("kv.put", "k", encode(t, builtin.KVPutArgs{}), nil)
	in.Scope = partition.AllPartitions(te.n)
	if _, err := te.exec(in); !errors.Is(err, ErrWrongScope) {
		t.Errorf("kv.put with a scope: got %v, want %v", err, ErrWrongScope)
	}
	in = te.input("bank.total", "", nil, nil)
	in.Scope = nil
	if _, err := te.exec(in); !errors.Is(err, ErrWrongScope) {
		t.Errorf("bank.total without a scope: got %v, want %v", err, ErrWrongScope)
	}
	// Still serving.
	if got := mustInvoke[int64](t, te, "counter.add", "k", builtin.CounterAddArgs{Delta: 2}); got != 2 {
		t.Errorf("after bad inputs: got %d, want 2", got)
	}
}

// seed gives te some state in every family, in one batch: kv rows, counters and stream
// records under x, y, z; accounts a0..a3 and b0 with balance 100 each; a voter contest with
// 3 contestants and a few votes.
func seed(t tb, te *testEngine) {
	t.Helper()
	var log []partition.Input
	add := func(proc, key string, args any) { log = append(log, te.input(proc, key, encode(t, args), nil)) }
	add("stream.create", "", builtin.StreamDefinition{Name: "s"})
	for i, k := range []string{"x", "y", "z"} {
		add("kv.put", k, builtin.KVPutArgs{Value: []byte{byte(i)}})
		add("counter.add", k, builtin.CounterAddArgs{Delta: int64(i)})
		add("stream.append", k, builtin.StreamAppendArgs{Stream: "s", Record: []byte(k)})
	}
	for _, a := range []string{"a0", "a1", "a2", "a3", "b0"} {
		add("bank.open", a, builtin.BankOpenArgs{Balance: 100})
	}
	add("voter.init", "", builtin.VoterInitArgs{Contestants: []string{"Ann", "Bob", "Cy"}})
	for i, phone := range []string{"2125550001", "2125550002", "4155550003"} {
		add("voter.vote", phone, builtin.VoteArgs{Contestant: int32(i%3 + 1)})
	}
	for _, m := range []string{"m0", "m1"} {
		add("group.join", "g", builtin.GroupJoinArgs{Stream: "s", Member: m})
	}
	add("group.commit", "g", builtin.GroupCommitArgs{Member: "m0", Generation: 2, Partition: 0, Offset: 1})
	for i, r := range te.eng.Execute(log) {
		if r.Err != nil {
			t.Fatalf("seed #%d %s: %v", i, log[i].Procedure, r.Err)
		}
	}
}
