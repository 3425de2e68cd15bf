package system

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// TestPipelineSQLSourceZombieAddsNothing is TestPipelineZombieSourceAddsNothing with the
// source created in SQL, its workers inside the nodes: the node (not the Raft leader)
// whose worker owns the most of the source's group partitions is stopped with SIGSTOP
// right after a transaction committed, while its worker is at work; once the group (in
// the log) has given its partitions to the other nodes' workers and they have brought in
// records produced after the stop, more is produced and the node is resumed (SIGCONT).
// Its stale worker is fenced (a newer generation, no longer a member, a stored offset
// that moved on) and adds nothing: the view, the PostgreSQL table and topic out are
// exactly as without it. The leader is never the one stopped: the fence is tested, not
// an election.
func TestPipelineSQLSourceZombieAddsNothing(t *testing.T) {
	if problems := pipelineSQLZombie(t); len(problems) > 0 {
		for _, p := range problems {
			t.Error(p)
		}
	}
}

// pipelineSQLZombie runs the SQL source's zombie run with the binary built with tags and
// returns the checker's problems.
func pipelineSQLZombie(t *testing.T, tags ...string) []string {
	start := time.Now()
	f := newPipelineFixtureSQL(t, 3, tags...)
	f.startPGSink(t)
	f.startKafkaSink(t)
	f.produceSpread(t, 4000)
	f.waitSourceCaughtUp(t)
	leader := f.leader(t)
	victim, owned, gen := f.zombieSourceNode(t, leader)
	v := f.c.Procs[victim]
	f.produce(t, 500, true)
	if err := v.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Signal(syscall.SIGCONT) })
	t.Logf("%.1f s: stopped node %s (not the leader, %s), whose worker owned partitions %v in generation %d",
		time.Since(start).Seconds(), v.ID, f.c.Procs[leader].ID, owned, gen)
	f.produceSpread(t, 2000)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	testutil.WaitFor(t, time.Minute, func() error {
		d, err := f.cl.Groups().Describe(ctx, "src")
		if err != nil {
			return err
		}
		if d.Generation <= gen {
			return fmt.Errorf("group src still in generation %d", d.Generation)
		}
		for _, m := range d.Members {
			if m.Member == v.ID && len(m.Partitions) > 0 {
				return fmt.Errorf("generation %d: the stopped node's worker still owns %v", d.Generation, m.Partitions)
			}
		}
		lags, err := f.sourceLags(t)
		if err != nil {
			return err
		}
		for _, l := range lags {
			// The partitions' ends are past every record produced before the stop:
			// reaching them, the new owners went past wherever the stopped worker was.
			if slices.Contains(owned, l.Partition) {
				if err := l.caughtUp(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	t.Logf("%.1f s: the other nodes' workers took partitions %v and brought in the records produced after the stop",
		time.Since(start).Seconds(), owned)
	f.produceSpread(t, 2000)
	if err := v.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	f.produceSpread(t, 1000)
	f.waitQuiet(t)
	if !v.Running() {
		t.Fatalf("node %s exited after SIGCONT: %s", v.ID, v.Log())
	}
	// How the resumed worker was fenced is a race: a stale source.append refused (a newer
	// generation, a stored offset that moved on), or its heartbeat told it is no member
	// any more (its session expired while it was stopped). The log says which.
	for _, l := range strings.Split(string(v.Log()), "\n") {
		if strings.Contains(l, "member="+v.ID) && (strings.Contains(l, "fenced") || strings.Contains(l, "source worker failed")) {
			t.Logf("node %s after SIGCONT: %s", v.ID, l)
		}
	}
	problems := f.check(t)
	t.Logf("%d records in %.1f s", f.seq, time.Since(start).Seconds())
	return problems
}

// zombieSourceNode waits until every node's worker of the SQL source owns partitions of
// its group and returns the index in f.c.Procs of the node other than leader whose
// worker owns the most, those partitions and the group's generation.
func (f *pipelineFixture) zombieSourceNode(t *testing.T, leader int) (idx int, owned []int32, gen uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	testutil.WaitFor(t, time.Minute, func() error {
		d, err := f.cl.Groups().Describe(ctx, "src")
		if err != nil {
			return err
		}
		byNode := map[string]builtin.GroupMemberInfo{}
		for _, m := range d.Members {
			byNode[m.Member] = m
		}
		idx, owned = -1, nil
		for i, n := range f.c.Procs {
			m, ok := byNode[n.ID]
			if !ok || len(m.Partitions) == 0 {
				return fmt.Errorf("generation %d: node %s's worker owns no partition (%+v)", d.Generation, n.ID, d.Members)
			}
			if i != leader && len(m.Partitions) > len(owned) {
				idx, owned = i, m.Partitions
			}
		}
		gen = d.Generation
		return nil
	})
	return idx, owned, gen
}
