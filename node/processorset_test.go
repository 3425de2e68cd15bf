package node

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// qBuild is verBuild with, in a new build, the processor q@1: it counts the records of
// stream "qin" per key in table "q".
func qBuild(withQ bool) *procedures.Registry {
	r := verBuild(false)
	if withQ {
		procedures.MustRegisterProcessor(r, "q", "qin", func(tx *partition.Tx, rec partition.Record) error {
			n := 0
			if v, ok := tx.Get("q", rec.Key); ok {
				fmt.Sscan(string(v), &n)
			}
			return tx.Put("q", rec.Key, []byte(fmt.Sprint(n+1)))
		})
	}
	return r
}

// TestActivateNewProcessor: from cluster version 3 the engine runs the active processors
// only. A cluster of build A is rolled to build B, which carries a new processor q@1:
// the nodes stay compatible (an inactive processor does not run and is not compared) and q
// does not run; activated, it starts on every replica at the activation's index (from the
// stream's first offset: it had never run), the hashes converge, and a restarted node
// replays the log to the same hashes (issue 22 item 3, processor sets).
func TestActivateNewProcessor(t *testing.T) {
	var mu sync.Mutex
	rolled := map[int]bool{}
	c := startCluster(t, clusterOptions{nodes: 3, patientRaft: true,
		registry: func(i int) *procedures.Registry {
			mu.Lock()
			defer mu.Unlock()
			return qBuild(rolled[i])
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: "qin"}); err != nil {
		t.Fatal(err)
	}
	appended := 0
	appendN := func(n int) {
		t.Helper()
		for i := range n {
			appended++
			if _, err := cl.Append(ctx, "qin", []byte(fmt.Sprint("k", i%3)), []byte("v")); err != nil {
				t.Fatalf("append: %v", err)
			}
		}
	}
	appendN(6)
	for i := range c.Nodes {
		c.kill(i)
		mu.Lock()
		rolled[i] = true
		mu.Unlock()
		c.restart(i)
		testutil.WaitFor(t, 60*time.Second, func() error { appendN(1); return c.Nodes[i].Ready() })
	}
	for i, n := range c.Nodes {
		for _, info := range n.FSM().ProcessorInfos() {
			if info.Name == "q" {
				t.Fatalf("node %d runs q before it is activated", i)
			}
		}
	}
	d, err := cl.Procedures().Activate(ctx, "processor:q@1")
	if err != nil || !strings.Contains(fmt.Sprint(d.Active), "processor:q@1") {
		t.Fatalf("activate q: %+v %v", d, err)
	}
	appendN(3)
	total := 0
	testutil.WaitFor(t, 60*time.Second, func() error {
		total = 0
		for _, st := range c.Nodes[0].FSM().Processors() {
			if st.Processor == "q" {
				total += int(st.Position)
			}
		}
		if total != appended {
			return fmt.Errorf("q handled %d records, want every one appended, %d", total, appended)
		}
		return nil
	})
	c.waitConverged()
	var index uint64
	for i, n := range c.Nodes {
		dep := n.FSM().Deployment()
		if index != 0 && dep.Index != index {
			t.Fatalf("node %d: q activated at index %d, node 0 at %d", i, dep.Index, index)
		}
		index = dep.Index
	}
	want := c.waitConverged()
	c.kill(1)
	c.restart(1)
	testutil.WaitFor(t, 60*time.Second, func() error { return c.Nodes[1].Ready() })
	if got := c.waitConverged(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("restarted node: hashes %x, want %x", got, want)
	}
}
