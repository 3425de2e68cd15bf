package report

import (
	"math"
	"testing"

	"github.com/lockstepdb/lockstep/node"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

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
		return map[string]*dto.MetricFamily{node.MetricCommitStageSeconds: series("stage", stages), node.MetricReplicationRPCSeconds: series("peer", repl),
			node.MetricApplySeconds: series("", map[string]*dto.Histogram{"": apply}), node.MetricRaftIsLeader: gauge(l)}
	}
	before := []NodeMetrics{
		{"a", nodeFams(true, map[string]*dto.Histogram{"queue": hist(10, 0.01, 10, 10, 10)}, nil, zero)},
		{"b", nodeFams(false, map[string]*dto.Histogram{"follower_persist": zero}, nil, zero)},
		{"gone", nodeFams(false, nil, nil, zero)},
	}
	after := []NodeMetrics{
		// 100 more queue observations: 50 ≤ 1ms, 40 in (1ms, 2ms], 10 in (2ms, 4ms].
		{"a", nodeFams(true, map[string]*dto.Histogram{"queue": hist(110, 0.16, 60, 100, 110)},
			map[string]*dto.Histogram{"b": hist(4, 0.004, 4, 4, 4), "new": hist(4, 0.012, 0, 0, 4)}, hist(2, 0.002, 2, 2, 2))},
		{"b", nodeFams(false, map[string]*dto.Histogram{"follower_persist": hist(3, 0.003, 3, 3, 3)}, nil, hist(5, 0.010, 0, 5, 5))},
		{"new", nodeFams(false, map[string]*dto.Histogram{"follower_persist": hist(9, 9, 9, 9, 9)}, nil, zero)},
	}
	r := RoundDelta(before, after)
	if r == nil || r.Nodes != 2 || r.Leader != "a" {
		t.Fatalf("got %+v, want nodes a and b, leader a", r)
	}
	got := map[string]RoundStage{}
	for _, s := range r.Stages {
		got[s.Stage+"/"+s.Where] = s
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for key, want := range map[string]RoundStage{
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
	if r := RoundDelta(before, []NodeMetrics{{"a", map[string]*dto.MetricFamily{}}}); r != nil {
		t.Errorf("node without stage metrics: got %+v, want nil", r)
	}
}
