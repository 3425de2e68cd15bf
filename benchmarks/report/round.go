package report

import (
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/lockstepdb/lockstep/node"
	dto "github.com/prometheus/client_model/go"
)

// The commit round's breakdown comes from every node's metrics, scraped when the warm-up
// ends and when the run ends: the histograms lockstep_commit_stage_seconds{stage},
// lockstep_replication_rpc_seconds{peer} and lockstep_apply_seconds (docs/operations.md,
// "Where a commit round goes"). Each stage's observations in between are added up over
// the nodes; the apply stage is split into the leader's (inside the round) and the
// followers' (after it).

// Round is where the commit rounds of the measured time went, per stage.
type Round struct {
	// Nodes is how many nodes' metrics were scraped before and after; Leader is the one
	// leading at the end ("" if none said so).
	Nodes  int          `json:"nodes"`
	Leader string       `json:"leader"`
	Stages []RoundStage `json:"stages"`
}

// RoundStage is one stage's observations over the measured time: how many, their mean,
// and their 99th percentile estimated from the histogram's buckets (linear within a
// bucket, as Prometheus's histogram_quantile).
type RoundStage struct {
	Stage  string  `json:"stage"`
	Where  string  `json:"where"`
	Count  int64   `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	P99Ms  float64 `json:"p99_ms"`
}

// stageDef says where a stage of the report comes from.
type stageDef struct {
	stage, where string
	metric       string
	label        string // the metric's "stage" label value; "" for every series
	role         int    // 0 every node, 1 the leader, -1 the followers
}

// stages are the report's stages, in the order a round passes them; "round" is the
// leader's whole raft.Apply → committed-and-applied time, the stages between queue and
// reply that are on the leader's path.
var stages = []stageDef{
	{"queue", "leader", node.MetricCommitStageSeconds, "queue", 0},
	{"leader_persist", "leader", node.MetricCommitStageSeconds, "leader_persist", 0},
	{"replication", "leader→follower RPC", node.MetricReplicationRPCSeconds, "", 0},
	{"follower_persist", "followers", node.MetricCommitStageSeconds, "follower_persist", 0},
	{"apply", "leader", node.MetricApplySeconds, "", 1},
	{"apply", "followers", node.MetricApplySeconds, "", -1},
	{"reply", "leader", node.MetricCommitStageSeconds, "reply", 0},
	{"round", "leader, Apply→applied", node.MetricCommitStageSeconds, "raft", 0},
}

// histDelta is what a histogram gained: cumulative counts by upper bound (+Inf included),
// count and sum.
type histDelta struct {
	cum        map[float64]int64
	count      int64
	sumSeconds float64
}

// add adds after-before of h to d.
func (d *histDelta) add(before, after *dto.Histogram) {
	if d.cum == nil {
		d.cum = map[float64]int64{}
	}
	prev := map[float64]uint64{}
	for _, b := range before.GetBucket() {
		prev[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	for _, b := range after.GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) {
			d.cum[b.GetUpperBound()] += int64(b.GetCumulativeCount() - prev[b.GetUpperBound()])
		}
	}
	n := int64(after.GetSampleCount() - before.GetSampleCount())
	d.cum[math.Inf(1)] += n
	d.count += n
	d.sumSeconds += after.GetSampleSum() - before.GetSampleSum()
}

// quantile estimates the q-quantile in seconds as Prometheus's histogram_quantile does:
// linear within the bucket it falls in; the highest finite bound if it falls above.
func (d *histDelta) quantile(q float64) float64 {
	if d.count == 0 {
		return 0
	}
	bounds := make([]float64, 0, len(d.cum))
	for b := range d.cum {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	rank := q * float64(d.count)
	lower, prevCum := 0.0, int64(0)
	for _, b := range bounds {
		cum := d.cum[b]
		if float64(cum) >= rank {
			if math.IsInf(b, 1) {
				return lower
			}
			if cum == prevCum {
				return b
			}
			return lower + (b-lower)*(rank-float64(prevCum))/float64(cum-prevCum)
		}
		lower, prevCum = b, cum
	}
	return lower
}

// seriesOf returns the histograms of fam whose "stage" label is stage ("": all), keyed by
// their labels.
func seriesOf(fam *dto.MetricFamily, stage string) map[string]*dto.Histogram {
	out := map[string]*dto.Histogram{}
	for _, m := range fam.GetMetric() {
		key := ""
		match := stage == ""
		for _, l := range m.GetLabel() {
			key += l.GetName() + "=" + l.GetValue() + ","
			if l.GetName() == "stage" && l.GetValue() == stage {
				match = true
			}
		}
		if match && m.GetHistogram() != nil {
			out[key] = m.GetHistogram()
		}
	}
	return out
}

// isLeader reports whether fams say their node leads.
func isLeader(fams map[string]*dto.MetricFamily) bool {
	f := fams[node.MetricRaftIsLeader]
	return f != nil && len(f.GetMetric()) == 1 && f.GetMetric()[0].GetGauge().GetValue() == 1
}

// RoundDelta returns the commit round's stages between the scrapes before and after, over
// the nodes in both; nil if no node has the stage metrics (a node older than them).
func RoundDelta(before, after []NodeMetrics) *Round {
	prev := map[string]map[string]*dto.MetricFamily{}
	for _, n := range before {
		prev[n.Node] = n.Families
	}
	r := &Round{}
	deltas := make([]histDelta, len(stages))
	for _, n := range after {
		b, ok := prev[n.Node]
		if !ok || n.Families[node.MetricCommitStageSeconds] == nil || b[node.MetricCommitStageSeconds] == nil {
			continue
		}
		r.Nodes++
		leader := isLeader(n.Families)
		if leader {
			r.Leader = n.Node
		}
		for i, def := range stages {
			if (def.role == 1 && !leader) || (def.role == -1 && leader) {
				continue
			}
			was := seriesOf(b[def.metric], def.label)
			for key, h := range seriesOf(n.Families[def.metric], def.label) {
				deltas[i].add(was[key], h)
			}
		}
	}
	if r.Nodes == 0 {
		return nil
	}
	for i, def := range stages {
		d := &deltas[i]
		st := RoundStage{Stage: def.stage, Where: def.where, Count: d.count}
		if d.count > 0 {
			st.MeanMs = d.sumSeconds / float64(d.count) * 1e3
			st.P99Ms = d.quantile(0.99) * 1e3
		}
		r.Stages = append(r.Stages, st)
	}
	return r
}

// WriteText prints the stages as rows of the bench's table.
func (r *Round) WriteText(w io.Writer) {
	if r == nil {
		fmt.Fprintf(w, "commit round\tnot known (give --admin with every node's admin address)\n")
		return
	}
	leader := r.Leader
	if leader == "" {
		leader = "none at the end"
	}
	fmt.Fprintf(w, "commit round\tper stage, from %d nodes' metrics (leader %s)\n", r.Nodes, leader)
	for _, s := range r.Stages {
		name := fmt.Sprintf("  %s (%s)", s.Stage, s.Where)
		if s.Count == 0 {
			fmt.Fprintf(w, "%s\tnone\n", name)
			continue
		}
		fmt.Fprintf(w, "%s\tmean %.3f ms  p99 %.3f ms  (%d)\n", name, s.MeanMs, s.P99Ms, s.Count)
	}
}
