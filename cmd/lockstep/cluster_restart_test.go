package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/node"
)

// Rolling restarts (`lockstep cluster restart-plan`, issue 13 item 8) with real processes.

// planOrder returns the node ids of a printed restart plan, in order, with their roles.
func planOrder(out string) (ids, roles []string) {
	for _, m := range regexp.MustCompile(`(?m)^\s+\d+\. (\S+) \(([a-z ]+),`).FindAllStringSubmatch(out, -1) {
		ids, roles = append(ids, m[1]), append(roles, m[2])
	}
	return ids, roles
}

// TestRollingRestartUnderLoad: `cluster restart-plan --execute` restarts each node of a
// 3-node cluster once, followers first and the leader last after a leadership transfer,
// while 8 workers add to counters through the client library: no caller sees an error
// (the library retries), no acknowledged add is lost, and the replicas end with equal
// state hashes (DESIGN.md invariants 1, 3, 4).
func TestRollingRestartUnderLoad(t *testing.T) {
	bin, c, ctx, load := proctest.LoadedCluster(t, 5*time.Minute, "rr", 8, 300)
	sup := proctest.Supervise(t, c.Procs, func(*proctest.Node) string { return bin })
	leader := proctest.LeaderNode(t, bin, c)
	script, err := sup.RestartScript()
	if err != nil {
		t.Fatal(err)
	}
	r := proctest.RunWithin(t, 4*time.Minute, bin, "cluster", "restart-plan", "--addr", c.AddrFlag(), "--execute",
		"--restart-cmd", "sh "+script+" {id}", "--node-timeout", "90s")
	if r.Code != 0 {
		t.Fatalf("restart-plan: %v", r)
	}
	t.Log(r.Stdout)
	ids, roles := planOrder(r.Stdout)
	if len(ids) != 3 || ids[2] != leader.ID || roles[2] != "leader" || roles[0] != "follower" || roles[1] != "follower" {
		t.Fatalf("plan %v %v, want two followers then the leader %s", ids, roles, leader.ID)
	}
	if !strings.Contains(r.Stdout, leader.ID+": leadership moved to ") {
		t.Fatalf("no leadership transfer away from %s: %v", leader.ID, r)
	}
	for _, n := range c.Procs {
		if got := sup.Restarts()[n.ID]; got != 1 {
			t.Errorf("%s restarted %d times, want once", n.ID, got)
		}
	}
	// The command got each node's id, client and Raft address, by placeholder and in its
	// environment, in the plan's order.
	rec, err := os.ReadFile(sup.RestartRecord())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(rec)), "\n")
	for i, id := range ids {
		n := c.Procs[slices.IndexFunc(c.Procs, func(n *proctest.Node) bool { return n.ID == id })]
		if want := fmt.Sprintf("%s %s %s %s", id, id, n.Client, n.Raft); i >= len(lines) || lines[i] != want {
			t.Fatalf("#%d: restart command saw %q, want %q", i, lines, want)
		}
	}
	load.WaitAcked(t, 300)
	load.Halt()
	failed := int64(0)
	for w := range load.Workers {
		failed += load.Unknown[w]
	}
	if failed != 0 {
		t.Errorf("%d adds failed at the caller during the rolling restart", failed)
	}
	load.Check(t, ctx, load.Client)
	proctest.WaitConvergedVoters(t, bin, c.AddrFlag(), []string{"n1", "n2", "n3"})
	gap := load.LongestGap()
	t.Logf("%d adds acknowledged, %d failed; longest time without an acknowledgement %v", load.Total.Load(), failed, gap)
}

// TestRestartPlanStops: a rolling restart stops at the first node whose restart command
// fails, or that is not back within --node-timeout, naming it and the nodes not
// restarted; a failing command restarts nothing.
func TestRestartPlanStops(t *testing.T) {
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 3)
	r := proctest.Run(t, bin, "cluster", "restart-plan", "--addr", c.AddrFlag())
	if r.Code != 0 {
		t.Fatalf("plan: %v", r)
	}
	ids, _ := planOrder(r.Stdout)
	if len(ids) != 3 {
		t.Fatalf("plan of %v: %v", ids, r)
	}
	// The same plan as JSON, the leader last.
	var plan restartPlanJSON
	r = proctest.MustRun(t, bin, "cluster", "restart-plan", "--addr", c.AddrFlag(), "-o", "json", "--restart-cmd", "restart {id}")
	if err := json.Unmarshal([]byte(r.Stdout), &plan); err != nil || len(plan.Steps) != 3 || plan.Executed ||
		plan.Steps[2].Role != "leader" || plan.Steps[0].ID != ids[0] || plan.Steps[0].Command != "restart '"+ids[0]+"'" {
		t.Fatalf("plan -o json: %+v, %v: %v", plan, err, r)
	}
	proctest.CheckFailure(t, proctest.Run(t, bin, "cluster", "restart-plan", "--addr", c.AddrFlag(), "--execute", "--restart-cmd", "exit 3"),
		fmt.Sprintf("rolling restart stopped at %s (node 1 of 3; not restarted: %s, %s): the restart command for %s failed (exit status 3)",
			ids[0], ids[1], ids[2], ids[0]))
	proctest.CheckFailure(t, proctest.Run(t, bin, "cluster", "restart-plan", "--addr", c.AddrFlag(), "--execute", "--restart-cmd", "true",
		"--node-timeout", "2s"), "still runs the process started")
	proctest.CheckFailure(t, proctest.Run(t, bin, "cluster", "restart-plan", "--addr", c.AddrFlag(), "--execute", "--restart-cmd", "sleep 30",
		"--restart-timeout", "500ms"), "did not finish within --restart-timeout 500ms")
	for _, n := range c.Procs {
		if !n.Running() {
			t.Fatalf("%s stopped", n.ID)
		}
	}
	// Nothing was restarted: the cluster is as healthy as before.
	proctest.MustRun(t, bin, "cluster", "status", "--addr", c.AddrFlag())
	// With a node down, a rolling restart would restart a second one: refused, and the
	// command never runs.
	c.Procs[0].Kill()
	marker := filepath.Join(t.TempDir(), "ran")
	proctest.CheckFailure(t, proctest.Run(t, bin, "cluster", "restart-plan", "--addr", c.AddrFlag(), "--execute", "--restart-cmd", "touch "+marker),
		"rolling restart refused: the cluster is not healthy")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a refused rolling restart ran the restart command")
	}
}

// TestRestartPlanBadInput: flags that cannot work (a malformed upgrade step among them) are
// refused before anything runs, and a cluster that cannot keep its quorum while a voter
// restarts is refused too.
func TestRestartPlanBadInput(t *testing.T) {
	bin := proctest.BuildBinary(t)
	proctest.CheckFailure(t, proctest.Run(t, bin, "cluster", "restart-plan", "--execute"), "--execute needs --restart-cmd")
	proctest.CheckFailure(t, proctest.Run(t, bin, "cluster", "restart-plan", "--node-timeout", "0s"), "--node-timeout 0s: want a positive duration")
	proctest.CheckFailure(t, proctest.Run(t, bin, "cluster", "restart-plan", "extra"), "takes no arguments")
	proctest.CheckFailure(t, proctest.Run(t, bin, "cluster", "restart-plan", "--upgrade", "0"), "--upgrade 0: want a cluster version")
	proctest.CheckFailure(t, proctest.Run(t, bin, "cluster", "restart-plan", "--activate", "score.add"), `--activate "score.add": want NAME@N`)
	proctest.CheckFailure(t, proctest.Run(t, bin, "cluster", "restart-plan", "--activate", "score.add@x"), `--activate "score.add@x": want NAME@N`)
	c := proctest.StartCluster(t, bin, 1)
	marker := filepath.Join(t.TempDir(), "ran")
	proctest.CheckFailure(t, proctest.Run(t, bin, "cluster", "restart-plan", "--addr", c.AddrFlag(), "--execute", "--restart-cmd", "touch "+marker),
		"rolling restart refused: 1 voter(s)")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a refused rolling restart ran the restart command")
	}
}

// TestRestartPlanUpgradeSteps: with --upgrade and --activate, `restart-plan --execute`
// runs "cluster upgrade" and "deploy activate" once every node is back and prints what
// each answers; a step the leader refuses stops it, saying that every node runs the new
// binary and which command to run again, with the leader's reason.
func TestRestartPlanUpgradeSteps(t *testing.T) {
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 3)
	sup := proctest.Supervise(t, c.Procs, func(*proctest.Node) string { return bin })
	script, err := sup.RestartScript()
	if err != nil {
		t.Fatal(err)
	}
	v := fmt.Sprint(node.MaxClusterVersion)
	plan := func(activate string) proctest.Result {
		return proctest.RunWithin(t, 3*time.Minute, bin, "cluster", "restart-plan", "--addr", c.AddrFlag(), "--execute",
			"--restart-cmd", "sh "+script+" {id}", "--node-timeout", "60s", "--upgrade", v, "--activate", activate)
	}
	r := plan("counter.add@1")
	if r.Code != 0 {
		t.Fatalf("restart-plan: %v", r)
	}
	for _, want := range []string{
		`(?m)^rolling restart done: 3 nodes in .*\nlockstep cluster upgrade ` + v + `:\ncluster version\s+` + v + `$`,
		`(?m)^lockstep deploy activate counter\.add@1:\ncluster version\s+` + v + `$`,
		`(?m)^active\s+counter\.add@1$`,
	} {
		if !regexp.MustCompile(want).MatchString(r.Stdout) {
			t.Errorf("restart-plan printed no %q: %v", want, r)
		}
	}
	r = plan("counter.add@1,nosuch.proc@1")
	proctest.CheckFailure(t, r, "rolling upgrade stopped after the roll: every node runs the new binary; "+
		"lockstep deploy activate counter.add@1 nosuch.proc@1 failed (run it again once the cause is fixed): ")
	if !strings.Contains(r.Stderr, "does not carry nosuch.proc@1") || !strings.Contains(r.Stdout, "rolling restart done: 3 nodes") {
		t.Fatalf("want the roll done and the leader's refusal naming nosuch.proc@1: %v", r)
	}
	for _, n := range c.Procs {
		if got := sup.Restarts()[n.ID]; got != 2 {
			t.Errorf("%s restarted %d times, want twice", n.ID, got)
		}
	}
}
