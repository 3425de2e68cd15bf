package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// TestBenchCommitRound: `lockstep bench` in its own process, against three `lockstep
// node` processes with every node's admin address, reports every stage of the commit
// round with observations of non-zero time, in --json and in the text report.
func TestBenchCommitRound(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := buildBinary(t)
	c := startCluster(t, bin, 3)
	var admin []string
	for _, n := range c.nodes {
		admin = append(admin, "--admin", n.admin)
	}
	args := append([]string{"bench", "--addr", c.addrs(), "--workload", "counter", "--clients", "32", "--connections", "2",
		"--duration", "2s", "--warmup", "500ms", "--no-progress"}, admin...)
	r := mustRun(t, bin, append(args, "--json")...)
	var rep benchReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	checkRound(t, rep.Round, 3)

	r = mustRun(t, bin, args...)
	for _, want := range []string{"commit round", "from 3 nodes' metrics", "leader_persist (leader)", "replication (leader→follower RPC)",
		"follower_persist (followers)", "apply (followers)", "reply (leader)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("text report lacks %q:\n%s", want, r.stdout)
		}
	}
}

// checkRound fails unless round covers nodes nodes and has every stage, each observed
// with a positive mean and p99.
func checkRound(t *testing.T, round *roundReport, nodes int) {
	t.Helper()
	if round == nil || round.Nodes != nodes || round.Leader == "" || len(round.Stages) != len(roundStages) {
		t.Fatalf("commit round: got %+v, want %d nodes, a leader and %d stages", round, nodes, len(roundStages))
	}
	for i, s := range round.Stages {
		if s.Stage != roundStages[i].stage || s.Where != roundStages[i].where || s.Count == 0 || s.MeanMs <= 0 || s.P99Ms <= 0 {
			t.Errorf("stage %d: got %+v, want %s (%s) observed", i, s, roundStages[i].stage, roundStages[i].where)
		}
	}
}

// TestRoundDelta: the stages are the differences between the scrapes, added over the
// nodes, with apply split by the role at the end; the p99 is interpolated within its
// bucket; a node missing from either scrape is left out.
func TestRoundDelta(t *testing.T) {
	hist := func(count uint64, sum float64, cum ...uint64) *dto.Histogram {
		h := &dto.Histogram{SampleCount: proto.Uint64(count), SampleSum: proto.Float64(sum)}
		for i, c := range cum {
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(0.001 * float64(int(1)<<i)), CumulativeCount: proto.Uint64(c)})
		}
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(math.Inf(1)), CumulativeCount: proto.Uint64(count)})
		return h
	}
	series := func(label string, hs map[string]*dto.Histogram) *dto.MetricFamily {
		f := &dto.MetricFamily{}
		for v, h := range hs {
			m := &dto.Metric{Histogram: h}
			if label != "" {
				m.Label = []*dto.LabelPair{{Name: proto.String(label), Value: proto.String(v)}}
			}
			f.Metric = append(f.Metric, m)
		}
		return f
	}
	gauge := func(v float64) *dto.MetricFamily {
		return &dto.MetricFamily{Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(v)}}}}
	}
	zero := hist(0, 0, 0, 0, 0)
	nodeFams := func(leader bool, stages map[string]*dto.Histogram, repl map[string]*dto.Histogram, apply *dto.Histogram) map[string]*dto.MetricFamily {
		l := 0.0
		if leader {
			l = 1
		}
		return map[string]*dto.MetricFamily{stageMetric: series("stage", stages), replicationMetric: series("peer", repl),
			applyMetric: series("", map[string]*dto.Histogram{"": apply}), leaderMetric: gauge(l)}
	}
	before := []nodeFamilies{
		{"a", nodeFams(true, map[string]*dto.Histogram{"queue": hist(10, 0.01, 10, 10, 10)}, nil, zero)},
		{"b", nodeFams(false, map[string]*dto.Histogram{"follower_persist": zero}, nil, zero)},
		{"gone", nodeFams(false, nil, nil, zero)},
	}
	after := []nodeFamilies{
		// 100 more queue observations: 50 ≤ 1ms, 40 in (1ms, 2ms], 10 in (2ms, 4ms].
		{"a", nodeFams(true, map[string]*dto.Histogram{"queue": hist(110, 0.16, 60, 100, 110)},
			map[string]*dto.Histogram{"b": hist(4, 0.004, 4, 4, 4), "new": hist(4, 0.012, 0, 0, 4)}, hist(2, 0.002, 2, 2, 2))},
		{"b", nodeFams(false, map[string]*dto.Histogram{"follower_persist": hist(3, 0.003, 3, 3, 3)}, nil, hist(5, 0.010, 0, 5, 5))},
		{"new", nodeFams(false, map[string]*dto.Histogram{"follower_persist": hist(9, 9, 9, 9, 9)}, nil, zero)},
	}
	r := roundDelta(before, after)
	if r == nil || r.Nodes != 2 || r.Leader != "a" {
		t.Fatalf("got %+v, want nodes a and b, leader a", r)
	}
	got := map[string]roundStage{}
	for _, s := range r.Stages {
		got[s.Stage+"/"+s.Where] = s
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for key, want := range map[string]roundStage{
		"queue/leader":                    {Count: 100, MeanMs: 1.5, P99Ms: 2 + 2*(99-90)/10.0},
		"replication/leader→follower RPC": {Count: 8, MeanMs: 2, P99Ms: 2 + 2*(7.92-4)/4},
		"follower_persist/followers":      {Count: 3, MeanMs: 1, P99Ms: 0.99 * 3 / 3},
		"apply/leader":                    {Count: 2, MeanMs: 1, P99Ms: 0.99 * 2 / 2},
		"apply/followers":                 {Count: 5, MeanMs: 2, P99Ms: 1 + (4.95-0)/5},
		"leader_persist/leader":           {},
		"reply/leader":                    {},
		"round/leader, Apply→applied":     {},
	} {
		g, ok := got[key]
		if !ok || g.Count != want.Count || !near(g.MeanMs, want.MeanMs) || !near(g.P99Ms, want.P99Ms) {
			t.Errorf("%s: got %+v, want count %d, mean %v ms, p99 %v ms", key, g, want.Count, want.MeanMs, want.P99Ms)
		}
	}
	if r := roundDelta(before, []nodeFamilies{{"a", map[string]*dto.MetricFamily{}}}); r != nil {
		t.Errorf("node without stage metrics: got %+v, want nil", r)
	}
}
