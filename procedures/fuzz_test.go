package procedures

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// FuzzBuiltinArgs feeds arbitrary argument bytes and keys to every built-in, on a fresh
// or a seeded engine, with any multi-partition scope. Whatever the input (DESIGN.md
// invariants 1, 2 and 7):
//   - no procedure panics (the engine would turn a panic into ErrPanic);
//   - a failed input leaves every partition's state exactly as it was;
//   - a read-only procedure changes nothing;
//   - a result decodes into the procedure's declared result type;
//   - the incremental Hash equals RecomputeHash on every partition;
//   - a sequential and a parallel engine agree on the result and the state.
func FuzzBuiltinArgs(f *testing.F) {
	seeds := []struct {
		proc string
		key  string
		args any
	}{
		{"bank.open", "a9", builtin.BankOpenArgs{Balance: 5}},
		{"bank.total", "", nil},
		{"bank.transfer", "", builtin.BankTransferArgs{From: "a0", To: "a1", Amount: 5}},
		{"bank.transfer", "", builtin.BankTransferArgs{From: "a0", To: "b0", Amount: 500}},
		{"counter.add", "x", builtin.CounterAddArgs{Delta: -3}},
		{"counter.add", "x", builtin.CounterAddArgs{Delta: 1<<63 - 1}},
		{"counter.get", "y", nil},
		{"group.join", "g", builtin.GroupJoinArgs{Stream: "s", Member: "m2", SessionTimeoutMs: 5}},
		{"group.heartbeat", "g", builtin.GroupMemberArgs{Member: "m1"}},
		{"group.leave", "g", builtin.GroupMemberArgs{Member: "m0"}},
		{"group.commit", "g", builtin.GroupCommitArgs{Member: "m0", Generation: 2, Partition: 2, Offset: 9}},
		{"group.offsets", "g", nil},
		{"group.describe", "g", nil},
		{"group.list", "", nil},
		{"kv.cas", "x", builtin.KVCasArgs{Old: []byte{0}, New: []byte("n")}},
		{"kv.cas", "q", builtin.KVCasArgs{OldAbsent: true, New: []byte("n")}},
		{"kv.delete", "x", builtin.NoArgs{}},
		{"kv.get", "x", nil},
		{"kv.put", "x", builtin.KVPutArgs{Value: []byte("v")}},
		{"stream.append", "x", builtin.StreamAppendArgs{Stream: "s", Record: []byte("r"), EventTime: 5}},
		{"stream.append_batch", "", builtin.StreamAppendBatchArgs{Stream: "s", Records: []builtin.StreamRecord{{Key: []byte("k"), Value: []byte("v")}}}},
		{"stream.create", "", builtin.StreamDefinition{Name: "s", Retention: builtin.StreamRetention{MaxRecords: 3}, Compact: true}},
		{"stream.delete", "", builtin.StreamNameArgs{Name: "s"}},
		{"stream.describe", "", builtin.StreamNameArgs{Name: "s"}},
		{"stream.list", "", nil},
		{"voter.area_totals", "", builtin.VoterAreaTotalsArgs{AreaCode: "212"}},
		{"voter.init", "", builtin.VoterInitArgs{Contestants: []string{"a", "b"}, MaxVotesPerPhone: 1}},
		{"voter.results", "", nil},
		{"voter.vote", "2125550001", builtin.VoteArgs{Contestant: 2}},
	}
	for i, s := range seeds {
		args := encode(f, s.args)
		for flags := range uint8(4) {
			f.Add(procIndex(s.proc), flags|uint8(i)<<2, []byte(s.key), args)
		}
	}
	f.Add(uint8(0), uint8(0), []byte{}, []byte{0xc1})
	f.Add(uint8(5), uint8(1), bytes.Repeat([]byte{'k'}, partition.MaxKeyBytes+1), []byte{0x80})
	f.Add(uint8(13), uint8(3), []byte("2125550001"), []byte{0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, proc, flags uint8, key, args []byte) {
		name := builtinNames[int(proc)%len(builtinNames)]
		const n = 3
		var engines [2]*testEngine
		var results [2]partition.Result
		for i := range engines {
			te := newTestEngineConfig(t, partition.Config{Partitions: n, Sequential: i == 0})
			engines[i] = te
			if flags&1 != 0 {
				seed(t, te)
			}
			in := te.input(name, "", args, nil)
			in.Key = key
			if in.Multi() {
				if mask := int(flags>>1) & (1<<n - 1); mask != 0 {
					in.Scope = in.Scope[:0]
					for p := range n {
						if mask&(1<<p) != 0 {
							in.Scope = append(in.Scope, p)
						}
					}
				}
			} else {
				in.Partition = partition.PartitionOf(key, n)
			}
			before := te.snapshot(t)
			res := te.eng.Execute([]partition.Input{in})[0]
			results[i] = partition.Result{Value: bytes.Clone(res.Value), Err: res.Err}
			after := te.snapshot(t) // also checks Hash == RecomputeHash
			info, _ := te.reg.Lookup(name)
			switch {
			case errors.Is(res.Err, partition.ErrPanic):
				t.Fatalf("%s(key %q, args %x) panicked: %v", name, key, args, res.Err)
			case res.Err != nil && !after.same(before):
				t.Fatalf("%s(key %q, args %x) failed with %v and changed state:\n%s\nwas\n%s", name, key, args, res.Err, after.dump, before.dump)
			case res.Err == nil && info.ReadOnly && !after.same(before):
				t.Fatalf("read-only %s(key %q, args %x) changed state", name, key, args)
			case res.Err == nil:
				out := reflect.New(info.Result)
				if err := msgpack.Unmarshal(res.Value, out.Interface()); err != nil {
					t.Fatalf("%s(key %q, args %x): result %x does not decode into %s: %v", name, key, args, res.Value, info.Result, err)
				}
			}
		}
		if a, b := results[0], results[1]; !bytes.Equal(a.Value, b.Value) || fmt.Sprint(a.Err) != fmt.Sprint(b.Err) ||
			!engines[0].snapshot(t).same(engines[1].snapshot(t)) {
			t.Fatalf("%s(key %q, args %x): sequential and parallel engines differ: %x %v / %x %v (invariant 1)",
				name, key, args, a.Value, a.Err, b.Value, b.Err)
		}
	})
}

func procIndex(name string) uint8 {
	for i, n := range builtinNames {
		if n == name {
			return uint8(i)
		}
	}
	panic("no built-in " + name)
}
