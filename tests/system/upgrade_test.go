package system

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/node"
)

// upgradeActivations are the registrations the rolling upgrade switches to at its end
// ("lockstep deploy activate"): what build B adds (examples/upgradeapp/new.go). A new
// registration of build B (a processor, say) goes here, and the check of its output
// after the load's check.
var upgradeActivations = []string{"score.add@2"}

// TestRollingUpgradeProcesses: the documented rolling upgrade (docs/operations.md,
// Upgrading a cluster) of three examples/upgradeapp node processes from build A (score.add@1
// only; cluster versions up to one below this Lockstep's) to build B (score.add@1 and @2;
// this Lockstep's newest) while four workers call score.add. Steps 1 and 2 are `lockstep
// cluster restart-plan --execute --upgrade`: each node in turn, followers first and the
// leader last after a leadership transfer, is stopped, its installed binary replaced,
// started again and waited for; then the cluster version moves forward. Step 3 is
// `lockstep deploy activate score.add@2`. No request of the load fails; every call runs
// exactly once, with version 1 until the activation (after the upgrade too) and version 2
// after it; a node restarted afterwards replays the log (snapshots are off) with the
// version active at each index and ends with the others' hashes; a node restarted on build
// A refuses to serve, naming why, and hands off a leadership it is given; activating
// score.add@1 again goes back to the old code (issue 22, Show; issue 26 item 2; DESIGN.md
// section 10).
func TestRollingUpgradeProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := proctest.BuildBinary(t) // the operator's lockstep CLI
	buildA, buildB := proctest.BuildUpgradeApp(t)
	from, to := uint64(node.MaxClusterVersion-1), uint64(node.MaxClusterVersion)

	// Snapshots off, so that a restarted node replays its whole log; no automatic
	// rebuild, so that a divergence shows as a fenced node instead of being repaired.
	c := proctest.StartClusterWith(t, buildA, 3, "--snapshot-threshold", "0", "--snapshot-bytes", "-1", "--auto-rebuild=false")
	addrs := c.AddrFlag()
	for _, n := range clusterStatus(t, bin, addrs).Nodes {
		if n.ClusterVersion != from || n.MaxVersion != from {
			t.Fatalf("%s on build A: cluster version %d, binary's newest %d; want %d and %d", n.NodeID, n.ClusterVersion, n.MaxVersion, from, from)
		}
	}
	// The installed binary of each node, which the restart command replaces: build A,
	// then build B. The supervisor starts a node's installed binary whenever its process
	// exits.
	inst := installBinaries(t, c, buildA)
	sup := proctest.Supervise(t, c.Procs, func(n *proctest.Node) string { return inst.path(n.ID) })
	script, err := sup.RestartScript()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	load := startScoreLoad(t, ctx, strings.Split(addrs, ","), 4, 10*time.Millisecond)
	load.waitAcked(t, 40)

	// Too early: a member's binary does not support the new version (the doc's first
	// failure).
	proctest.CheckFailure(t, proctest.Run(t, bin, "cluster", "upgrade", fmt.Sprint(to), "--addr", addrs),
		fmt.Sprintf("supports cluster versions 1..%d, not %d", from, to))

	// The upgrade, steps 1 and 2: the roll and the new cluster version, in one command.
	r := proctest.RunWithin(t, 3*time.Minute, bin, "cluster", "restart-plan", "--addr", addrs, "--execute",
		"--restart-cmd", inst.rollCommand(buildB, script), "--node-timeout", "60s", "--upgrade", fmt.Sprint(to))
	t.Logf("restart-plan:\n%s", r.Stdout)
	if r.Code != 0 {
		t.Fatalf("restart-plan: %v", r)
	}
	checkUpgradeOutput(t, r.Stdout, to)
	for _, n := range c.Procs {
		if got := sup.Restarts()[n.ID]; got != 1 {
			t.Errorf("%s restarted %d times during the roll, want once", n.ID, got)
		}
	}
	// The new cluster version runs the old code until the activation.
	var res scoreResult
	if err := load.cl.Invoke(ctx, "score.add", []byte("probe"), struct{}{}, &res); err != nil || res.Version != 1 {
		t.Fatalf("score.add after the upgrade, before the activation: %+v %v; want version 1", res, err)
	}
	// Step 3: the new code, switched at one log index.
	activated := proctest.MustRun(t, bin, append([]string{"deploy", "activate", "--addr", addrs}, upgradeActivations...)...).Stdout
	checkDeployment(t, "deploy activate", activated, to, upgradeActivations)
	if err := load.cl.Invoke(ctx, "score.add", []byte("probe"), struct{}{}, &res); err != nil || res.Version != 2 || res.Score != 1+10 {
		t.Fatalf("score.add after the activation: %+v %v; want version 2, score 11", res, err)
	}
	checkDeployment(t, "deploy list", proctest.MustRun(t, bin, "deploy", "list", "--addr", addrs).Stdout, to, upgradeActivations)
	load.waitAcked(t, 40)

	// A follower restarted on build B replays the old entries with score.add@1 and the
	// new ones with @2: its hashes must end equal to the others' (checked at the end).
	fs := followers(t, bin, addrs, c)
	replayed, old := fs[0], fs[1]
	restartSupervised(t, sup, script, replayed.ID)
	waitBack(t, ctx, sup, replayed)
	load.waitAcked(t, 20)

	// A node restarted on build A after the activation refuses to serve, naming the
	// reason, and hands off the leadership it is given.
	inst.install(t, old.ID, buildA)
	restartSupervised(t, sup, script, old.ID)
	checkRefusesAndHandsOff(t, ctx, bin, addrs, sup, old, "A",
		fmt.Sprintf("the cluster runs cluster version %d, this binary supports 1..%d", to, from))
	load.waitAcked(t, 20)
	inst.install(t, old.ID, buildB)
	restartSupervised(t, sup, script, old.ID)
	waitBack(t, ctx, sup, old)
	load.waitAcked(t, 20)

	load.halt()
	ran := load.check(t)
	t.Logf("score.add calls: %d by version 1, %d by version 2; none failed", ran[1], ran[2])
	if ran[1] == 0 || ran[2] == 0 {
		t.Fatalf("calls by version: %v, want some before the switch and some after", ran)
	}
	// The way back for code (not for the cluster version): the previous registration
	// activated again runs from a new index on.
	back := proctest.MustRun(t, bin, "deploy", "activate", "score.add@1", "--addr", addrs).Stdout
	checkDeployment(t, "deploy activate score.add@1", back, to, []string{"score.add@1"})
	if err := load.cl.Invoke(ctx, "score.add", []byte("player-0"), struct{}{}, &res); err != nil || res.Version != 1 {
		t.Fatalf("score.add after activating @1 again: %+v %v", res, err)
	}
	proctest.WaitConvergedVoters(t, bin, addrs, []string{"n1", "n2", "n3"})
	for _, n := range clusterStatus(t, bin, addrs).Nodes {
		if n.Rebuilds != 0 || n.Divergent != "" || n.Incompatible != "" || n.ClusterVersion != to {
			t.Errorf("%s: rebuilds %d, divergent %q, incompatible %q, cluster version %d", n.NodeID, n.Rebuilds, n.Divergent, n.Incompatible, n.ClusterVersion)
		}
	}
}

// checkUpgradeOutput checks what `restart-plan --execute --upgrade` printed against
// docs/operations.md: the plan (followers first, the leader last after a transfer, then
// the cluster-wide step), each node back, and the deployment after the upgrade.
func checkUpgradeOutput(t *testing.T, out string, to uint64) {
	t.Helper()
	var roles []string
	for _, m := range regexp.MustCompile(`(?m)^\s+\d+\. (\S+) \(([a-z ]+),`).FindAllStringSubmatch(out, -1) {
		roles = append(roles, m[1]+":"+m[2])
	}
	if len(roles) != 3 || !strings.HasSuffix(roles[0], ":follower") || !strings.HasSuffix(roles[1], ":follower") || !strings.HasSuffix(roles[2], ":leader") {
		t.Fatalf("plan %v, want two followers then the leader", roles)
	}
	leader := strings.TrimSuffix(roles[2], ":leader")
	wants := []string{
		`rolling upgrade of 3 nodes, one at a time \(read replicas and followers first, the leader last, then the cluster-wide steps\):`,
		fmt.Sprintf(`(?m)^\s+4\. move the cluster version forward: lockstep cluster upgrade %d$`, to),
		regexp.QuoteMeta(leader) + `: leadership moved to `,
		`rolling restart done: 3 nodes in `,
		fmt.Sprintf(`(?m)^lockstep cluster upgrade %d:\ncluster version\s+%d$`, to, to),
		`(?m)^active\s+score\.add@1$`, // from version 1 to 2, each procedure's version 1
	}
	for _, want := range wants {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("restart-plan printed no %q", want)
		}
	}
	for _, r := range roles {
		id := strings.Split(r, ":")[0]
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(id) + `: back after .*, caught up, cluster healthy$`).MatchString(out) {
			t.Errorf("restart-plan printed no %s back", id)
		}
	}
}
