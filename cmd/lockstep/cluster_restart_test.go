package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/jepsen"
)

// Rolling restarts (`lockstep cluster restart-plan`, issue 13 item 8) with real processes.

// supervise has a jepsen.Supervisor restart the nodes' processes when they exit; the
// test's end stops it and checks the logs of the processes it started.
func supervise(t *testing.T, bin string, nodes []*procNode) *jepsen.Supervisor {
	t.Helper()
	s := jepsen.NewSupervisor(t.TempDir(), binaryEnv())
	t.Cleanup(func() {
		procs, errs := s.Close()
		for id, p := range procs {
			checkLog(t, "restarted "+id, p.Log())
		}
		for _, err := range errs {
			t.Errorf("supervisor: %v", err)
		}
	})
	for _, n := range nodes {
		if err := s.Watch(n.id, n.Process, bin, append([]string{"node"}, n.args...)...); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

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
	bin, c, ctx, load := loadedCluster(t, 5*time.Minute, "rr", 8, 300)
	sup := supervise(t, bin, c.nodes)
	leader := leaderNode(t, bin, c)
	script, err := sup.RestartScript()
	if err != nil {
		t.Fatal(err)
	}
	r := runWithin(t, 4*time.Minute, bin, "cluster", "restart-plan", "--addr", c.addrs(), "--execute",
		"--restart-cmd", "sh "+script+" {id}", "--node-timeout", "90s")
	if r.code != 0 {
		t.Fatalf("restart-plan: %v", r)
	}
	t.Log(r.stdout)
	ids, roles := planOrder(r.stdout)
	if len(ids) != 3 || ids[2] != leader.id || roles[2] != "leader" || roles[0] != "follower" || roles[1] != "follower" {
		t.Fatalf("plan %v %v, want two followers then the leader %s", ids, roles, leader.id)
	}
	if !strings.Contains(r.stdout, leader.id+": leadership moved to ") {
		t.Fatalf("no leadership transfer away from %s: %v", leader.id, r)
	}
	for _, n := range c.nodes {
		if got := sup.Restarts()[n.id]; got != 1 {
			t.Errorf("%s restarted %d times, want once", n.id, got)
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
		n := c.nodes[slices.IndexFunc(c.nodes, func(n *procNode) bool { return n.id == id })]
		if want := fmt.Sprintf("%s %s %s %s", id, id, n.client, n.raft); i >= len(lines) || lines[i] != want {
			t.Fatalf("#%d: restart command saw %q, want %q", i, lines, want)
		}
	}
	load.waitAcked(t, 300)
	load.halt()
	failed := int64(0)
	for w := range load.workers {
		failed += load.unknown[w]
	}
	if failed != 0 {
		t.Errorf("%d adds failed at the caller during the rolling restart", failed)
	}
	load.check(t, ctx, load.cl)
	waitConvergedVoters(t, bin, c.addrs(), []string{"n1", "n2", "n3"})
	load.mu.Lock()
	gap := load.longestGap
	load.mu.Unlock()
	t.Logf("%d adds acknowledged, %d failed; longest time without an acknowledgement %v", load.total.Load(), failed, gap)
}

// TestRestartPlanStops: a rolling restart stops at the first node whose restart command
// fails, or that is not back within --node-timeout, naming it and the nodes not
// restarted; a failing command restarts nothing.
func TestRestartPlanStops(t *testing.T) {
	bin := buildBinary(t)
	c := startCluster(t, bin, 3)
	r := run(t, bin, "cluster", "restart-plan", "--addr", c.addrs())
	if r.code != 0 {
		t.Fatalf("plan: %v", r)
	}
	ids, _ := planOrder(r.stdout)
	if len(ids) != 3 {
		t.Fatalf("plan of %v: %v", ids, r)
	}
	checkFailure(t, run(t, bin, "cluster", "restart-plan", "--addr", c.addrs(), "--execute", "--restart-cmd", "exit 3"),
		fmt.Sprintf("rolling restart stopped at %s (node 1 of 3; not restarted: %s, %s): the restart command for %s failed (exit status 3)",
			ids[0], ids[1], ids[2], ids[0]))
	checkFailure(t, run(t, bin, "cluster", "restart-plan", "--addr", c.addrs(), "--execute", "--restart-cmd", "true",
		"--node-timeout", "2s"), "still runs the process started")
	checkFailure(t, run(t, bin, "cluster", "restart-plan", "--addr", c.addrs(), "--execute", "--restart-cmd", "sleep 30",
		"--restart-timeout", "500ms"), "did not finish within --restart-timeout 500ms")
	for _, n := range c.nodes {
		if !n.Running() {
			t.Fatalf("%s stopped", n.id)
		}
	}
	// Nothing was restarted: the cluster is as healthy as before.
	mustRun(t, bin, "cluster", "status", "--addr", c.addrs())
	// With a node down, a rolling restart would restart a second one: refused, and the
	// command never runs.
	c.nodes[0].Kill()
	marker := filepath.Join(t.TempDir(), "ran")
	checkFailure(t, run(t, bin, "cluster", "restart-plan", "--addr", c.addrs(), "--execute", "--restart-cmd", "touch "+marker),
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

// TestRestartPlanBadInput: flags that cannot work are refused before anything runs, and
// a cluster that cannot keep its quorum while a voter restarts is refused too.
func TestRestartPlanBadInput(t *testing.T) {
	bin := buildBinary(t)
	checkFailure(t, run(t, bin, "cluster", "restart-plan", "--execute"), "--execute needs --restart-cmd")
	checkFailure(t, run(t, bin, "cluster", "restart-plan", "--node-timeout", "0s"), "--node-timeout 0s: want a positive duration")
	checkFailure(t, run(t, bin, "cluster", "restart-plan", "extra"), "takes no arguments")
	c := startCluster(t, bin, 1)
	marker := filepath.Join(t.TempDir(), "ran")
	checkFailure(t, run(t, bin, "cluster", "restart-plan", "--addr", c.addrs(), "--execute", "--restart-cmd", "touch "+marker),
		"rolling restart refused: 1 voter(s)")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a refused rolling restart ran the restart command")
	}
}
