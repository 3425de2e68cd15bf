package procedures

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// groupEngine returns an engine of n partitions with stream "in" created and the
// test.process procedure (see registerProcess) registered.
func groupEngine(t *testing.T, n int) *testEngine {
	t.Helper()
	te := newTestEngine(t, n, registerProcess)
	mustInvoke[builtin.StreamDefinition](t, te, builtin.StreamCreate, "", builtin.StreamDefinition{Name: "in"})
	return te
}

// processArgs are the arguments of test.process: write Value under Key in table
// "processed" and commit Commit, in one step.
type processArgs struct {
	Key    string                  `msgpack:"k"`
	Value  string                  `msgpack:"v"`
	Commit builtin.GroupCommitArgs `msgpack:"c"`
}

// registerProcess registers test.process, a consume-process-commit procedure: its
// write and its offset commit happen together or not at all.
func registerProcess(r *Registry) {
	MustRegister(r, "test.process", func(tx *partition.Tx, a processArgs) (builtin.NoArgs, error) {
		view, err := tx.On(tx.PartitionOf([]byte(a.Key)))
		if err != nil {
			return builtin.NoArgs{}, err
		}
		if err := view.Put("processed", []byte(a.Key), []byte(a.Value)); err != nil {
			return builtin.NoArgs{}, err
		}
		return builtin.NoArgs{}, CommitGroupOffset(tx, a.Commit)
	}, MultiPartition(), Doc("test: multi-partition (keys: k and the group); args processArgs; result NoArgs"))
}

func join(t *testing.T, te *testEngine, group, member string, timeoutMs int64) builtin.GroupAssignment {
	t.Helper()
	return mustInvoke[builtin.GroupAssignment](t, te, builtin.GroupJoin, group,
		builtin.GroupJoinArgs{Stream: "in", Member: member, SessionTimeoutMs: timeoutMs})
}

// TestGroupLifecycle walks a group through joins, heartbeats, commits and a leave, and
// checks generations, assignments and the typed refusals of a zombie.
func TestGroupLifecycle(t *testing.T) {
	const n = 4
	te := groupEngine(t, n)
	a1 := join(t, te, "g", "a", 0)
	if want := (builtin.GroupAssignment{Generation: 1, Stream: "in", Partitions: []int32{0, 1, 2, 3}, Members: 1}); !reflect.DeepEqual(a1, want) {
		t.Fatalf("join a: got %+v, want %+v", a1, want)
	}
	b2 := join(t, te, "g", "b", 0)
	if want := (builtin.GroupAssignment{Generation: 2, Stream: "in", Partitions: []int32{1, 3}, Members: 2}); !reflect.DeepEqual(b2, want) {
		t.Fatalf("join b: got %+v, want %+v", b2, want)
	}
	hb := mustInvoke[builtin.GroupAssignment](t, te, builtin.GroupHeartbeat, "g", builtin.GroupMemberArgs{Member: "a"})
	if want := (builtin.GroupAssignment{Generation: 2, Stream: "in", Partitions: []int32{0, 2}, Members: 2}); !reflect.DeepEqual(hb, want) {
		t.Fatalf("heartbeat a: got %+v, want %+v", hb, want)
	}
	commit := func(member string, gen uint64, p int32, off uint64) error {
		_, err := invoke[builtin.NoArgs](t, te, builtin.GroupCommit, "g",
			builtin.GroupCommitArgs{Member: member, Generation: gen, Partition: p, Offset: off})
		return err
	}
	if err := commit("a", 2, 0, 10); err != nil {
		t.Fatalf("commit a gen 2 p0: %v", err)
	}
	before := te.snapshot(t)
	for i, c := range []struct {
		member string
		gen    uint64
		p      int32
		want   error
	}{
		{"a", 1, 0, ErrStaleGeneration}, // a zombie of generation 1
		{"a", 3, 0, ErrStaleGeneration}, // a generation from the future
		{"a", 2, 1, ErrNotAssigned},     // b's partition
		{"c", 2, 0, ErrNotGroupMember},
		{"a", 2, n, partition.ErrBadScope},
		{"a", 2, -1, partition.ErrBadScope},
		{"", 2, 0, ErrBadArguments},
	} {
		if err := commit(c.member, c.gen, c.p, 99); !errors.Is(err, c.want) {
			t.Errorf("#%d: got %v, want %v", i, err, c.want)
		}
	}
	if after := te.snapshot(t); !after.same(before) {
		t.Errorf("refused commits changed state:\n%s\nwant\n%s", after.dump, before.dump)
	}
	gen := mustInvoke[uint64](t, te, builtin.GroupLeave, "g", builtin.GroupMemberArgs{Member: "b"})
	if gen != 3 {
		t.Errorf("leave b: got generation %d, want 3", gen)
	}
	if _, err := invoke[builtin.GroupAssignment](t, te, builtin.GroupHeartbeat, "g", builtin.GroupMemberArgs{Member: "b"}); !errors.Is(err, ErrNotGroupMember) {
		t.Errorf("heartbeat after leave: got %v, want ErrNotGroupMember", err)
	}
	if err := commit("a", 2, 0, 11); !errors.Is(err, ErrStaleGeneration) {
		t.Errorf("commit with generation 2 after the leave: got %v, want ErrStaleGeneration", err)
	}
	if err := commit("a", 3, 3, 7); err != nil {
		t.Errorf("commit a gen 3 p3 (b's before): %v", err)
	}
	d := mustInvoke[builtin.GroupDescription](t, te, builtin.GroupDescribe, "g", nil)
	wantOffsets := []builtin.GroupOffset{{Partition: 0, Offset: 10, Generation: 2}, {Partition: 3, Offset: 7, Generation: 3}}
	if d.Generation != 3 || len(d.Members) != 1 || d.Members[0].Member != "a" || !reflect.DeepEqual(d.Offsets, wantOffsets) ||
		!reflect.DeepEqual(d.Members[0].Partitions, []int32{0, 1, 2, 3}) {
		t.Errorf("describe: got %+v", d)
	}
	offs := mustInvoke[[]builtin.GroupOffset](t, te, builtin.GroupOffsets, "g", nil)
	if !reflect.DeepEqual(offs, wantOffsets) {
		t.Errorf("offsets: got %+v, want %+v", offs, wantOffsets)
	}
	join(t, te, "h", "x", 0)
	list := mustInvoke[[]builtin.GroupSummary](t, te, builtin.GroupList, "", nil)
	wantList := []builtin.GroupSummary{{Group: "g", Stream: "in", Generation: 3, Members: 1}, {Group: "h", Stream: "in", Generation: 1, Members: 1}}
	if !reflect.DeepEqual(list, wantList) {
		t.Errorf("list: got %+v, want %+v", list, wantList)
	}
}

// TestGroupExpiryByBatchTime checks that a member is removed, with a new generation,
// exactly when the batch time passes its last heartbeat plus its session timeout, and
// that a zombie's commit after that changes nothing.
func TestGroupExpiryByBatchTime(t *testing.T) {
	te := groupEngine(t, 2)
	join(t, te, "g", "a", 1000)
	join(t, te, "g", "b", 5000)
	// The clock moves only with the inputs' batch time, never with the wall clock: the
	// heartbeat's batch time is a's last heartbeat plus exactly its timeout (each input
	// also adds 1 ns).
	te.skew += int64(1000*time.Millisecond) - 2
	hb := mustInvoke[builtin.GroupAssignment](t, te, builtin.GroupHeartbeat, "g", builtin.GroupMemberArgs{Member: "b"})
	if hb.Generation != 2 || hb.Members != 2 {
		t.Fatalf("heartbeat at a's deadline: got %+v, want generation 2 with 2 members", hb)
	}
	te.skew += int64(time.Millisecond)
	before := te.snapshot(t)
	// a's own calls are refused once its deadline passed, and change nothing (not even
	// the expiry they would have carried out).
	if _, err := invoke[builtin.NoArgs](t, te, builtin.GroupCommit, "g", builtin.GroupCommitArgs{Member: "a", Generation: 2, Partition: 0, Offset: 5}); !errors.Is(err, ErrNotGroupMember) {
		t.Fatalf("zombie commit: got %v, want ErrNotGroupMember", err)
	}
	if after := te.snapshot(t); !after.same(before) {
		t.Errorf("a refused commit changed state")
	}
	hb = mustInvoke[builtin.GroupAssignment](t, te, builtin.GroupHeartbeat, "g", builtin.GroupMemberArgs{Member: "b"})
	if want := (builtin.GroupAssignment{Generation: 3, Stream: "in", Partitions: []int32{0, 1}, Members: 1}); !reflect.DeepEqual(hb, want) {
		t.Fatalf("heartbeat after a's deadline: got %+v, want %+v", hb, want)
	}
	// b expires too, by batch time alone; the next join starts a new generation.
	te.skew += int64(6 * time.Second)
	c := join(t, te, "g", "c", 0)
	if c.Generation != 4 || c.Members != 1 {
		t.Errorf("join after b's deadline: got %+v, want generation 4 (b's expiry and c's join in one step) with 1 member", c)
	}
}

// TestGroupBadInput checks invariant 7 for groups: each bad call gets its typed error
// and changes nothing.
func TestGroupBadInput(t *testing.T) {
	te := groupEngine(t, 3)
	join(t, te, "g", "a", 0)
	long := string(make([]byte, 200))
	before := te.snapshot(t)
	for i, c := range []struct {
		proc, key string
		args      any
		want      error
	}{
		{builtin.GroupJoin, "g", builtin.GroupJoinArgs{Stream: "nope", Member: "b"}, partition.ErrUnknownStream},
		{builtin.GroupJoin, "g", builtin.GroupJoinArgs{Stream: "in", Member: ""}, ErrBadArguments},
		{builtin.GroupJoin, "g", builtin.GroupJoinArgs{Stream: "in", Member: long}, ErrBadArguments},
		{builtin.GroupJoin, "g", builtin.GroupJoinArgs{Stream: "in", Member: "b", SessionTimeoutMs: -1}, ErrBadArguments},
		{builtin.GroupJoin, "g", builtin.GroupJoinArgs{Stream: "in", Member: "b", SessionTimeoutMs: builtin.MaxGroupSessionTimeoutMs + 1}, ErrBadArguments},
		{builtin.GroupJoin, "g\x00x", builtin.GroupJoinArgs{Stream: "in", Member: "b"}, ErrBadArguments},
		{builtin.GroupJoin, long, builtin.GroupJoinArgs{Stream: "in", Member: "b"}, ErrBadArguments},
		{builtin.GroupJoin, "g", map[string]any{"zz": 1}, ErrBadArguments},
		{builtin.GroupHeartbeat, "nogroup", builtin.GroupMemberArgs{Member: "a"}, ErrUnknownGroup},
		{builtin.GroupHeartbeat, "g", builtin.GroupMemberArgs{Member: "zz"}, ErrNotGroupMember},
		{builtin.GroupLeave, "nogroup", builtin.GroupMemberArgs{Member: "a"}, ErrUnknownGroup},
		{builtin.GroupLeave, "g", builtin.GroupMemberArgs{Member: "zz"}, ErrNotGroupMember},
		{builtin.GroupCommit, "nogroup", builtin.GroupCommitArgs{Member: "a", Generation: 1}, ErrUnknownGroup},
		{builtin.GroupDescribe, "nogroup", nil, ErrUnknownGroup},
		{builtin.GroupOffsets, "nogroup", nil, ErrUnknownGroup},
	} {
		if _, err := te.exec(te.input(c.proc, c.key, encode(t, c.args), nil)); !errors.Is(err, c.want) {
			t.Errorf("#%d %s(%q): got %v, want %v", i, c.proc, c.key, err, c.want)
		}
	}
	if after := te.snapshot(t); !after.same(before) {
		t.Errorf("refused calls (unknown group, not a member, bad arguments) changed state")
	}
	// A group consumes one stream for its life.
	mustInvoke[builtin.StreamDefinition](t, te, builtin.StreamCreate, "", builtin.StreamDefinition{Name: "other"})
	before = te.snapshot(t)
	if _, err := invoke[builtin.GroupAssignment](t, te, builtin.GroupJoin, "g", builtin.GroupJoinArgs{Stream: "other", Member: "b"}); !errors.Is(err, ErrBadArguments) {
		t.Errorf("join with another stream: got %v, want ErrBadArguments", err)
	}
	if after := te.snapshot(t); !after.same(before) {
		t.Errorf("refused calls changed state")
	}
}

// TestGroupTableReserved checks that a procedure cannot write the group table by name.
func TestGroupTableReserved(t *testing.T) {
	te := newTestEngine(t, 2, func(r *Registry) {
		MustRegister(r, "test.tamper", func(tx *partition.Tx, _ builtin.NoArgs) (builtin.NoArgs, error) {
			return builtin.NoArgs{}, tx.Put(partition.SysGroups, groupKey("g"), []byte("x"))
		})
	})
	if _, err := invoke[builtin.NoArgs](t, te, "test.tamper", "g", nil); !errors.Is(err, partition.ErrSystemTable) {
		t.Errorf("got %v, want ErrSystemTable", err)
	}
}

// TestAssignEveryPartitionOnce checks the assignment function: for every member count
// and partition count, each partition belongs to exactly one member, shares differ by at
// most one, and a group's view (assignmentOf, owns) agrees with Assign.
func TestAssignEveryPartitionOnce(t *testing.T) {
	for members := 0; members <= 12; members++ {
		for parts := 1; parts <= 20; parts++ {
			got := Assign(members, parts)
			owner := make([]int, parts)
			for i := range owner {
				owner[i] = -1
			}
			lo, hi := parts, 0
			g := groupState{Members: make([]memberState, members)}
			for m, ps := range got {
				lo, hi = min(lo, len(ps)), max(hi, len(ps))
				if !reflect.DeepEqual(ps, g.assignmentOf(m, parts)) {
					t.Errorf("%d members, %d partitions, member %d: Assign %v, assignmentOf %v", members, parts, m, ps, g.assignmentOf(m, parts))
				}
				for _, p := range ps {
					if owner[p] != -1 {
						t.Errorf("%d members, %d partitions: partition %d owned by %d and %d", members, parts, p, owner[p], m)
					}
					owner[p] = m
					if !g.owns(m, parts, p) {
						t.Errorf("%d members, %d partitions: owns(%d, %d) false", members, parts, m, p)
					}
				}
			}
			for p, o := range owner {
				if members > 0 && o == -1 {
					t.Errorf("%d members, %d partitions: partition %d unassigned", members, parts, p)
				}
			}
			if members > 0 && hi-lo > 1 {
				t.Errorf("%d members, %d partitions: shares from %d to %d", members, parts, lo, hi)
			}
		}
	}
}

// TestConsumeProcessCommitAtomic checks DESIGN.md invariant 2 for a procedure that
// commits a group offset in the same step as its write: both happen, or neither.
func TestConsumeProcessCommitAtomic(t *testing.T) {
	const n = 4
	te := groupEngine(t, n)
	a := join(t, te, "g", "a", 0)
	process := func(key string, c builtin.GroupCommitArgs, keys ...string) error {
		c.Group = "g"
		in := te.inputKeys("test.process", encode(t, processArgs{Key: key, Value: "v-" + key, Commit: c}), keys...)
		_, err := te.exec(in)
		return err
	}
	// Good: the write and the commit.
	if err := process("k1", builtin.GroupCommitArgs{Member: "a", Generation: a.Generation, Partition: 2, Offset: 5}, "k1", "g"); err != nil {
		t.Fatalf("process: %v", err)
	}
	p1 := te.eng.Partitions()[partition.PartitionOf([]byte("k1"), n)]
	if v, ok := p1.Get("processed", []byte("k1")); !ok || string(v) != "v-k1" {
		t.Errorf("the write is missing: %q %v", v, ok)
	}
	offs := mustInvoke[[]builtin.GroupOffset](t, te, builtin.GroupOffsets, "g", nil)
	if !reflect.DeepEqual(offs, []builtin.GroupOffset{{Partition: 2, Offset: 5, Generation: 1}}) {
		t.Errorf("offsets: got %+v", offs)
	}
	join(t, te, "g", "b", 0) // generation 2: a's generation-1 work is a zombie's
	before := te.snapshot(t)
	for i, c := range []struct {
		key    string
		commit builtin.GroupCommitArgs
		keys   []string
		want   error
	}{
		{"k2", builtin.GroupCommitArgs{Member: "a", Generation: 1, Partition: 2, Offset: 9}, []string{"k2", "g"}, ErrStaleGeneration},
		{"k2", builtin.GroupCommitArgs{Member: "a", Generation: 2, Partition: 1, Offset: 9}, []string{"k2", "g"}, ErrNotAssigned},
		{"k2", builtin.GroupCommitArgs{Member: "z", Generation: 2, Partition: 2, Offset: 9}, []string{"k2", "g"}, ErrNotGroupMember},
		{keyOn("k", partition.PartitionOf([]byte("g"), n)^1, n), builtin.GroupCommitArgs{Member: "a", Generation: 2, Partition: 2, Offset: 9},
			[]string{keyOn("k", partition.PartitionOf([]byte("g"), n)^1, n)}, ErrWrongScope}, // the group's partition not in scope
	} {
		if err := process(c.key, c.commit, c.keys...); !errors.Is(err, c.want) {
			t.Errorf("#%d: got %v, want %v", i, err, c.want)
		}
	}
	if after := te.snapshot(t); !after.same(before) {
		t.Errorf("a refused consume-process-commit left a trace:\n%s\nwant\n%s", after.dump, before.dump)
	}
}

// TestGroupDeterministic checks DESIGN.md invariant 1 for groups: a random log of group
// calls (joins, heartbeats, leaves, commits, consume-process-commit, with expiries as the
// batch time moves) gives the same results and state on parallel and sequential engines,
// whatever the grouping of inputs into Execute calls.
func TestGroupDeterministic(t *testing.T) {
	const n = 4
	rng := rand.New(rand.NewPCG(3, 9))
	gen := groupEngine(t, n)
	log := gen.groupLog(t, rng, 2000)
	ref := checkDeterministic(t, n, log, 32, 2, registerProcess)
	var ok, refused int
	for _, r := range ref {
		if r[len(r)-5:] == "<nil>" {
			ok++
		} else {
			refused++
		}
	}
	if ok < len(ref)/4 || refused < len(ref)/20 {
		t.Fatalf("the log exercises too little: %d succeeded, %d refused", ok, refused)
	}
}

// groupLog returns the stream creation and count random group inputs over three groups
// and six members, with a clock that moves 0 to 400 ms per input (session timeouts are
// 1 to 3 s), and generations guessed from what a member was last told — sometimes stale.
func (te *testEngine) groupLog(t *testing.T, rng *rand.Rand, count int) []partition.Input {
	log := []partition.Input{te.input(builtin.StreamCreate, "", encode(t, builtin.StreamDefinition{Name: "in"}), nil)}
	groups := []string{"g0", "g1", "g2"}
	members := []string{"m0", "m1", "m2", "m3", "m4", "m5"}
	for len(log) < count {
		te.skew += rng.Int64N(400) * 1e6
		g, m := groups[rng.IntN(len(groups))], members[rng.IntN(len(members))]
		gen := uint64(rng.IntN(6))
		p := int32(rng.IntN(te.n))
		var in partition.Input
		switch rng.IntN(8) {
		case 0, 1:
			in = te.input(builtin.GroupJoin, g, encode(t, builtin.GroupJoinArgs{Stream: "in", Member: m, SessionTimeoutMs: 1000 + rng.Int64N(2000)}), nil)
		case 2, 3:
			in = te.input(builtin.GroupHeartbeat, g, encode(t, builtin.GroupMemberArgs{Member: m}), nil)
		case 4:
			in = te.input(builtin.GroupLeave, g, encode(t, builtin.GroupMemberArgs{Member: m}), nil)
		case 5:
			in = te.input(builtin.GroupCommit, g, encode(t, builtin.GroupCommitArgs{Member: m, Generation: gen, Partition: p, Offset: rng.Uint64N(100)}), nil)
		case 6:
			k := fmt.Sprintf("k%d", rng.IntN(10))
			in = te.inputKeys("test.process", encode(t, processArgs{Key: k, Value: k, Commit: builtin.GroupCommitArgs{Group: g, Member: m, Generation: gen, Partition: p, Offset: rng.Uint64N(100)}}), k, g)
		case 7:
			in = te.input([]string{builtin.GroupDescribe, builtin.GroupOffsets, builtin.GroupList}[rng.IntN(3)], g, nil, nil)
		}
		log = append(log, in)
	}
	return log
}

// TestGroupFull checks the member bound: the join past builtin.MaxGroupMembers fails
// with a TooLarge error and changes nothing; a member already in the group still rejoins.
func TestGroupFull(t *testing.T) {
	te := groupEngine(t, 2)
	for i := range builtin.MaxGroupMembers {
		join(t, te, "g", fmt.Sprintf("m%04d", i), 0)
	}
	before := te.snapshot(t)
	_, err := invoke[builtin.GroupAssignment](t, te, builtin.GroupJoin, "g", builtin.GroupJoinArgs{Stream: "in", Member: "one-more"})
	if !errors.Is(err, ErrGroupFull) || !errors.Is(err, partition.ErrValueTooLarge) {
		t.Fatalf("join past the bound: got %v, want ErrGroupFull (TooLarge)", err)
	}
	if after := te.snapshot(t); !after.same(before) {
		t.Errorf("the refused join changed state")
	}
	if a := join(t, te, "g", "m0007", 0); a.Generation != builtin.MaxGroupMembers+1 || a.Members != builtin.MaxGroupMembers {
		t.Errorf("rejoin of a member of a full group: got %+v", a)
	}
}

// TestGroupRejoinFencesOldIncarnation: a member that joins again under its id (a
// restarted process) starts a new generation with the same assignment, so the commits of
// its old incarnation (paused, not dead) are refused.
func TestGroupRejoinFencesOldIncarnation(t *testing.T) {
	te := groupEngine(t, 4)
	join(t, te, "g", "a", 0)
	old := join(t, te, "g", "b", 0)
	again := join(t, te, "g", "b", 0)
	if again.Generation != old.Generation+1 || !reflect.DeepEqual(again.Partitions, old.Partitions) || again.Members != 2 {
		t.Fatalf("rejoin: got %+v, want generation %d with the partitions %v of 2 members", again, old.Generation+1, old.Partitions)
	}
	commit := func(gen uint64) error {
		_, err := invoke[builtin.NoArgs](t, te, builtin.GroupCommit, "g",
			builtin.GroupCommitArgs{Member: "b", Generation: gen, Partition: old.Partitions[0], Offset: 3})
		return err
	}
	if err := commit(old.Generation); !errors.Is(err, ErrStaleGeneration) {
		t.Errorf("the old incarnation's commit: got %v, want ErrStaleGeneration", err)
	}
	if err := commit(again.Generation); err != nil {
		t.Errorf("the new incarnation's commit: %v", err)
	}
}

// TestGroupCorruptRows checks that a group row that does not decode, or an offset row of
// the wrong length, fails the group calls that read it with ErrCorruptValue.
func TestGroupCorruptRows(t *testing.T) {
	te := newTestEngine(t, 2, func(r *Registry) {
		MustRegister(r, "test.corrupt", func(tx *partition.Tx, _ builtin.NoArgs) (builtin.NoArgs, error) {
			g := string(tx.Key())
			if err := tx.PutGroupRow(groupKey(g), []byte{0xc1}); err != nil { // 0xc1: never used
				return builtin.NoArgs{}, err
			}
			return builtin.NoArgs{}, tx.PutGroupRow(offsetKey(g, 0), []byte{1, 2, 3})
		})
	})
	mustInvoke[builtin.NoArgs](t, te, "test.corrupt", "g", nil)
	for i, call := range []struct {
		proc string
		args any
	}{
		{builtin.GroupHeartbeat, builtin.GroupMemberArgs{Member: "m"}},
		{builtin.GroupDescribe, nil},
		{builtin.GroupOffsets, nil},
		{builtin.GroupList, nil},
	} {
		before := te.snapshot(t)
		if _, err := invoke[any](t, te, call.proc, "g", call.args); !errors.Is(err, ErrCorruptValue) {
			t.Errorf("#%d %s: got %v, want %v", i, call.proc, err, ErrCorruptValue)
		}
		if !te.snapshot(t).same(before) {
			t.Errorf("#%d %s: state changed", i, call.proc)
		}
	}
}
