package replica

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
	"pgregory.net/rapid"
)

// The consumer-group property test applies one generated log of group calls — joins,
// heartbeats, leaves, commits with current and stale generations, while batch time moves
// past session timeouts — to replicas that group the entries into ApplyBatch calls
// differently and run the partitions in parallel or one after another, and requires the
// same results, the same group state (members, generations, offsets) and the same hashes,
// also after a snapshot round trip (DESIGN.md invariants 1 and 6; section 5 "Out").

// groupItem is a group call keyed by its group, without a session.
func groupItem(parts int, proc, group string, args any) batch.Item {
	b, err := msgpack.Marshal(args)
	if err != nil {
		panic(err)
	}
	return batch.Item{Kind: batch.KindInvoke, Procedure: proc, Key: []byte(group),
		Partition: int32(partition.PartitionOf([]byte(group), parts)), Args: b}
}

func genGroupLog(t *rapid.T) []*raft.Log {
	groups := []string{"g0", "g1", "g2"}
	members := []string{"a", "b", "c", "d", "e"}
	now := int64(1e15)
	e := batch.Entry{Time: now, Items: []batch.Item{createStreamItem(propParts, "in")}}
	logs := []*raft.Log{commandLog(1, &e)}
	entries := rapid.IntRange(5, 40).Draw(t, "entries")
	for i := range entries {
		if rapid.IntRange(0, 4).Draw(t, "time shape") == 0 {
			now += rapid.Int64Range(int64(500*time.Millisecond), int64(3*time.Second)).Draw(t, "long step")
		} else {
			now += rapid.Int64Range(0, int64(200*time.Millisecond)).Draw(t, "step")
		}
		e := batch.Entry{Time: now}
		for range rapid.IntRange(1, 10).Draw(t, "items") {
			g := rapid.SampledFrom(groups).Draw(t, "group")
			m := rapid.SampledFrom(members).Draw(t, "member")
			var it batch.Item
			switch rapid.IntRange(0, 5).Draw(t, "call") {
			case 0:
				it = groupItem(propParts, builtin.GroupJoin, g, builtin.GroupJoinArgs{Stream: "in", Member: m,
					SessionTimeoutMs: rapid.Int64Range(500, 2500).Draw(t, "timeout")})
			case 1, 2:
				it = groupItem(propParts, builtin.GroupHeartbeat, g, builtin.GroupMemberArgs{Member: m})
			case 3:
				it = groupItem(propParts, builtin.GroupLeave, g, builtin.GroupMemberArgs{Member: m})
			default:
				it = groupItem(propParts, builtin.GroupCommit, g, builtin.GroupCommitArgs{Member: m,
					Generation: rapid.Uint64Range(0, 8).Draw(t, "generation"),
					Partition:  int32(rapid.IntRange(0, propParts-1).Draw(t, "partition")),
					Offset:     rapid.Uint64Range(0, 1000).Draw(t, "offset")})
			}
			e.Items = append(e.Items, it)
		}
		logs = append(logs, commandLog(uint64(i+2), &e))
	}
	return logs
}

// groupsDump is a canonical text of every group's state as group.describe shows it.
func groupsDump(t fataler, f *FSM) string {
	var s string
	for _, p := range f.Engine().Partitions() {
		p.Scan(partition.SysGroups, partition.ScanOptions{}, func(k, v []byte) bool {
			s += fmt.Sprintf("p%d %q %x\n", p.ID(), k, v)
			return true
		})
	}
	return s
}

func newGroupFSM(t fataler, cfg Config) *FSM {
	t.Helper()
	return newFSMWith(t, cfg, procedures.Builtins())
}

func TestGroupsIndependentOfApplyGrouping(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		logs := genGroupLog(t)
		type run struct {
			name string
			f    *FSM
			out  [][]itemOutcome
		}
		var runs []run
		for name, groups := range groupings(t, len(logs)) {
			for _, seq := range []bool{true, false} {
				cfg := propConfig(0)
				cfg.Sequential = seq
				f := newGroupFSM(t, cfg)
				defer f.Close()
				runs = append(runs, run{fmt.Sprintf("%s sequential=%t", name, seq), f, applyGroups(f, logs, groups)})
			}
		}
		ref := runs[0]
		for _, r := range runs[1:] {
			for i := range r.out {
				for j := range r.out[i] {
					if r.out[i][j] != ref.out[i][j] {
						t.Fatalf("entry %d item %d: %s gives %+v, %s gives %+v", logs[i].Index, j, r.name, r.out[i][j], ref.name, ref.out[i][j])
					}
				}
			}
			if got, want := groupsDump(t, r.f), groupsDump(t, ref.f); got != want {
				t.Fatalf("group state differs:\n%s:\n%s\n%s:\n%s", r.name, got, ref.name, want)
			}
			if got, want := fmt.Sprint(r.f.eng.Hashes()), fmt.Sprint(ref.f.eng.Hashes()); got != want {
				t.Fatalf("partition hashes differ: %s %s, %s %s", r.name, got, ref.name, want)
			}
			if got, want := fmt.Sprint(r.f.HashRecords()), fmt.Sprint(ref.f.HashRecords()); got != want {
				t.Fatalf("hash records differ: %s %s, %s %s", r.name, got, ref.name, want)
			}
		}
		// A replica restored from a snapshot holds the same groups.
		g := snapshotRoundTripWith(t, ref.f, func() *FSM { return newGroupFSM(t, propConfig(0)) })
		defer g.Close()
		if got, want := groupsDump(t, g), groupsDump(t, ref.f); got != want {
			t.Fatalf("restored groups differ:\n%s\nwant\n%s", got, want)
		}
		if got, want := fmt.Sprint(g.eng.Hashes()), fmt.Sprint(ref.f.eng.Hashes()); got != want {
			t.Fatalf("restored partition hashes %s, want %s", got, want)
		}
	})
}
