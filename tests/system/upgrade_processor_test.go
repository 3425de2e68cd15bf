package system

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// The registrations build C adds (examples/upgradeapp/next.go): a processor counting the
// records of stream "plays" per key, and the read-only procedure that reads its counts.
const (
	playsStream    = "plays"
	playsProcessor = "plays.count"
	playsGet       = "plays.get"
)

// playsActivations is what TestRollingAddProcessor activates once every node runs build C.
var playsActivations = []string{"processor:" + playsProcessor + "@1", playsGet + "@1"}

// TestRollingAddProcessor: adding a processor the cluster never ran to a live cluster
// (docs/operations.md, Upgrading a cluster; docs/procedures.md, Deploying and
// upgrading). Three examples/upgradeapp node processes of build B bootstrap at cluster version 3, where the
// engine runs only the active processors; while workers append to stream "plays" (the
// client's exactly-once append) and call score.add, `lockstep cluster restart-plan
// --execute` rolls each node to build C, which carries the processor plays.count@1 and
// its read procedure plays.get@1, and `lockstep deploy activate` adds both at one log
// index. No request fails; until the activation neither runs; after it the counts equal
// the acknowledged appends per key exactly once — the ones appended before the
// activation too, since the processor starts at the stream's first offset (StartEarliest,
// the default) — and every node's lag reaches 0 with equal state hashes; a follower
// restarted afterwards replays the log (snapshots off) to the others' hashes; a node
// restarted on build B refuses to serve, naming the processor it lacks, and hands off a
// leadership it is given (issue 22, Show, first bullet; DESIGN.md section 10, invariants
// 1, 3 and 6).
func TestRollingAddProcessor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := proctest.BuildBinary(t) // the operator's lockstep CLI
	buildB, buildC := proctest.BuildUpgradeAppNext(t)
	version := uint64(node.MaxClusterVersion)

	// Snapshots off, so that a restarted node replays its whole log; no automatic
	// rebuild, so that a divergence shows as a fenced node instead of being repaired.
	c := proctest.StartClusterWith(t, buildB, 3, "--snapshot-threshold", "0", "--snapshot-bytes", "-1", "--auto-rebuild=false")
	addrs := c.AddrFlag()
	for _, n := range clusterStatus(t, bin, addrs).Nodes {
		if n.ClusterVersion != version || version < 3 {
			t.Fatalf("%s on build B: cluster version %d, want %d (3 or later: processor sets)", n.NodeID, n.ClusterVersion, version)
		}
	}
	inst := installBinaries(t, c, buildB)
	sup := proctest.Supervise(t, c.Procs, func(n *proctest.Node) string { return inst.path(n.ID) })
	script, err := sup.RestartScript()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, client.Config{Addrs: strings.Split(addrs, ","), MaxRetries: -1, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: playsStream}); err != nil {
		t.Fatal(err)
	}
	scores := startScoreLoad(t, ctx, strings.Split(addrs, ","), 2, 10*time.Millisecond)
	plays := startPlayLoad(t, ctx, strings.Split(addrs, ","), 3, 5*time.Millisecond)
	plays.waitAcked(t, 30)

	// Step 1: the roll to build C, followers first, the leader last. No new cluster
	// version: build C runs the one the cluster runs.
	r := proctest.RunWithin(t, 2*time.Minute, bin, "cluster", "restart-plan", "--addr", addrs, "--execute",
		"--restart-cmd", inst.rollCommand(buildC, script), "--node-timeout", "60s")
	t.Logf("restart-plan:\n%s", r.Stdout)
	if r.Code != 0 || !strings.Contains(r.Stdout, "rolling restart done: 3 nodes in ") {
		t.Fatalf("restart-plan: %v", r)
	}
	for _, n := range c.Procs {
		if got := sup.Restarts()[n.ID]; got != 1 {
			t.Errorf("%s restarted %d times during the roll, want once", n.ID, got)
		}
	}
	// Carried, not active: the processor does not run and its procedure is unknown.
	for _, n := range c.Procs {
		for _, st := range processorsOf(t, bin, addrs, n.Client) {
			if st.Processor == playsProcessor {
				t.Fatalf("%s runs %s before its activation: %+v", n.ID, playsProcessor, st)
			}
		}
	}
	if _, err := client.QueryAs[int64](ctx, cl, playsGet, []byte("fan-0"), struct{}{}, client.ReadLinearizable); !errors.Is(err, client.ErrUnknownProcedure) {
		t.Fatalf("%s before its activation: %v, want ErrUnknownProcedure", playsGet, err)
	}
	plays.waitAcked(t, 20)

	// Step 2: the processor and its procedure, added at one log index. The appends
	// acknowledged before it count too: the processor starts at the stream's first offset.
	before := plays.acked.Load()
	activated := proctest.MustRun(t, bin, append([]string{"deploy", "activate", "--addr", addrs}, playsActivations...)...).Stdout
	checkDeployment(t, "deploy activate", activated, version, playsActivations)
	plays.waitAcked(t, 30)

	// A follower restarted on build C replays the entries before the activation without
	// the processor and those after it with it: its hashes must end equal to the others'.
	fs := followers(t, bin, addrs, c)
	replayed, old := fs[0], fs[1]
	restartSupervised(t, sup, script, replayed.ID)
	waitBack(t, ctx, sup, replayed)
	plays.waitAcked(t, 20)

	// A node restarted on build B lacks the active processor: it refuses to serve, naming
	// it, and hands off the leadership it is given.
	inst.install(t, old.ID, buildB)
	restartSupervised(t, sup, script, old.ID)
	checkRefusesAndHandsOff(t, ctx, bin, addrs, sup, old, "B",
		fmt.Sprintf("processor %s@1 is active in the cluster and this binary does not carry it", playsProcessor))
	plays.waitAcked(t, 20)
	inst.install(t, old.ID, buildC)
	restartSupervised(t, sup, script, old.ID)
	waitBack(t, ctx, sup, old)
	plays.waitAcked(t, 20)

	plays.halt()
	scores.halt()
	acked := plays.check(t)
	ran := scores.check(t)
	t.Logf("appends acknowledged: %d over %d keys, %d of them before the activation; score.add calls: %v; none failed",
		plays.acked.Load(), len(acked), before, ran)

	// Every node handles every record once: its lag reaches 0, and its positions add up
	// to the records appended (retention trims nothing; StartEarliest: from offset 0).
	for _, n := range c.Procs {
		testutil.WaitFor(t, 60*time.Second, func() error {
			var handled, lag uint64
			parts := 0
			for _, st := range processorsOf(t, bin, addrs, n.Client) {
				if st.Processor != playsProcessor {
					continue
				}
				parts++
				handled += st.Position
				lag += st.Lag
				if st.Waiting || st.DeadLetters != 0 || st.Skipped != 0 || st.Version != 1 {
					return fmt.Errorf("%s: %+v", n.ID, st)
				}
			}
			if parts != 4 || lag != 0 || handled != uint64(plays.acked.Load()) {
				return fmt.Errorf("%s: %s on %d partitions, lag %d, %d records handled; want 4 partitions, lag 0, the %d appended",
					n.ID, playsProcessor, parts, lag, handled, plays.acked.Load())
			}
			return nil
		})
	}
	// Exactly once per key: the processor's count of each key is the appends acknowledged.
	for key, want := range acked {
		got, err := client.QueryAs[int64](ctx, cl, playsGet, []byte(key), struct{}{}, client.ReadLinearizable)
		if err != nil || got != want {
			t.Errorf("%s %s: %d %v, want the %d appends acknowledged", playsGet, key, got, err, want)
		}
	}
	// No divergence (a replica that ran other records would be fenced by now: the hash
	// checks run all along), then equal state hashes at one applied index.
	for _, n := range proctest.StatusAnyHealth[clusterStatusJSON](t, bin, addrs).Nodes {
		if n.Rebuilds != 0 || n.Divergent != "" || n.Incompatible != "" || n.ClusterVersion != version {
			t.Errorf("%s: rebuilds %d, divergent %q, incompatible %q, cluster version %d", n.NodeID, n.Rebuilds, n.Divergent, n.Incompatible, n.ClusterVersion)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	proctest.WaitConvergedVoters(t, bin, addrs, []string{"n1", "n2", "n3"})
}

// processorsOf returns `lockstep processors -o json` of the node at nodeAddr.
func processorsOf(t *testing.T, bin, addrs, nodeAddr string) []client.ProcessorStatus {
	t.Helper()
	out := proctest.MustRun(t, bin, "processors", "--addr", addrs, "--node", nodeAddr, "-o", "json").Stdout
	var sts []client.ProcessorStatus
	if err := json.Unmarshal([]byte(out), &sts); err != nil {
		t.Fatalf("processors -o json of %s: %v\n%s", nodeAddr, err, out)
	}
	return sts
}
