package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/benchmarks/report"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
)

// TestBenchCommitRound: `lockstep bench` in its own process, against three `lockstep
// node` processes with every node's admin address, reports every stage of the commit
// round with observations of non-zero time, in --json and in the text report.
func TestBenchCommitRound(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 3)
	var admin []string
	for _, n := range c.Procs {
		admin = append(admin, "--admin", n.Admin)
	}
	args := append([]string{"bench", "--addr", c.AddrFlag(), "--workload", "counter", "--clients", "32", "--connections", "2",
		"--duration", "2s", "--warmup", "500ms", "--no-progress"}, admin...)
	r := proctest.MustRun(t, bin, append(args, "--json")...)
	var rep benchReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.Stdout)
	}
	checkRound(t, rep.Round, 3)

	r = proctest.MustRun(t, bin, args...)
	for _, want := range []string{"commit round", "from 3 nodes' metrics", "leader_persist (leader)", "replication (leader→follower RPC)",
		"follower_persist (followers)", "apply (followers)", "reply (leader)"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("text report lacks %q:\n%s", want, r.Stdout)
		}
	}
}

// checkRound fails unless round covers nodes nodes and has every stage, each observed
// with a positive mean and p99.
func checkRound(t *testing.T, round *report.Round, nodes int) {
	t.Helper()
	// The report's eight stages, in the order a round passes them (benchmarks/report).
	const stages = 8
	if round == nil || round.Nodes != nodes || round.Leader == "" || len(round.Stages) != stages {
		t.Fatalf("commit round: got %+v, want %d nodes, a leader and %d stages", round, nodes, stages)
	}
	for i, s := range round.Stages {
		if s.Count == 0 || s.MeanMs <= 0 || s.P99Ms <= 0 {
			t.Errorf("stage %d: got %+v, want it observed", i, s)
		}
	}
}
