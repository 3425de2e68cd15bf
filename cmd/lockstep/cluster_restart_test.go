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

	"github.com/lockstepdb/lockstep/client"
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

// TestRestartPlanOrder: read replicas and learners first, then followers, each by id,
// the leader last; only voters count towards the quorum check.
func TestRestartPlanOrder(t *testing.T) {
	row := func(id, state, suffrage string, replica bool) nodeRow {
		var r nodeRow
		r.NodeID, r.State, r.Suffrage, r.ReadReplica = id, client.Role(state), suffrage, replica
		return r
	}
	cs := clusterStatusJSON{Leader: "n2", Nodes: []nodeRow{
		row("n1", "Follower", "voter", false), row("n2", "Leader", "voter", false), row("n3", "Follower", "voter", false),
		row("r1", "Follower", "learner", true), row("n4", "Follower", "learner", false),
	}}
	plan, voters := restartPlan(cs)
	var got []string
	for _, s := range plan {
		got = append(got, s.id+":"+s.role)
	}
	want := []string{"n4:learner", "r1:read replica", "n1:follower", "n3:follower", "n2:leader"}
	if !slices.Equal(got, want) || voters != 3 {
		t.Fatalf("got %v with %d voters, want %v with 3", got, voters, want)
	}
}

// TestRestartCommandFor: placeholders become single-quoted shell words, quotes included.
func TestRestartCommandFor(t *testing.T) {
	for i, tc := range []struct{ tmpl, id, want string }{
		{"restart {id} {client} {raft}", "n1", "restart 'n1' 'c:1' 'r:2'"},
		{"x {id}", "it's", `x 'it'\''s'`},
		{"no placeholders", "n1", "no placeholders"},
	} {
		if got := restartCommandFor(tc.tmpl, restartStep{id: tc.id, client: "c:1", raft: "r:2"}); got != tc.want {
			t.Errorf("#%d: got %q, want %q", i, got, tc.want)
		}
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

// TestRestartPlanMatchesDoc: what `cluster restart-plan` prints, for a restart and for an
// upgrade (--upgrade, --activate), is what docs/operations.md shows after the command
// line it gives, line for line: the plan follows the documented procedure (followers
// first, the leader last after a transfer, then the cluster-wide steps).
func TestRestartPlanMatchesDoc(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	row := func(id, state string) nodeRow {
		var r nodeRow
		r.NodeID, r.State, r.Suffrage = id, client.Role(state), "voter"
		r.ClientAddr, r.RaftAddr = "10.0.0."+id[1:]+":8001", "10.0.0."+id[1:]+":7001"
		return r
	}
	cs := clusterStatusJSON{Leader: "n1", Nodes: []nodeRow{row("n1", "Leader"), row("n2", "Follower"), row("n3", "Follower")}}
	for i, tc := range []struct {
		command string
		upgrade upgradeSteps
	}{
		{"$ lockstep cluster restart-plan --addr 10.0.0.1:8001", upgradeSteps{}},
		{"$ lockstep cluster restart-plan --addr 10.0.0.1:8001 --upgrade 2 --activate clicks.count@2",
			upgradeSteps{version: 2, activate: []string{"clicks.count@2"}}},
	} {
		want, ok := docBlockAfter(string(doc), tc.command)
		if !ok {
			t.Fatalf("#%d: docs/operations.md shows no output of %q", i, tc.command)
		}
		var out strings.Builder
		r := &restarter{out: &out, upgrade: tc.upgrade}
		plan, _ := restartPlan(cs)
		r.printPlan(plan)
		if got := out.String(); got != want {
			t.Errorf("#%d: %s prints\n%s\ndocs/operations.md shows\n%s", i, tc.command, got, want)
		}
	}
}

// docBlockAfter returns the lines of the indented code block of doc that follow the line
// command in it, unindented, each ending in a newline.
func docBlockAfter(doc, command string) (string, bool) {
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != command || !strings.HasPrefix(l, "    ") {
			continue
		}
		var b strings.Builder
		for _, l := range lines[i+1:] {
			if !strings.HasPrefix(l, "    ") {
				break
			}
			b.WriteString(l[4:] + "\n")
		}
		return b.String(), true
	}
	return "", false
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
