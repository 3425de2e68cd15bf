package node

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstepdb/lockstep/sequencer"
)

// stageCollector exports the commit round's stage timings (sequencer.StageTimings) as
// histograms, read at scrape time: lockstep_commit_stage_seconds by stage, and
// lockstep_replication_rpc_seconds by follower. The FSM apply stage is
// lockstep_apply_seconds (Metrics.applySeconds).
type stageCollector struct {
	n                  *Node
	stage, replication *prometheus.Desc
}

func newStageCollector(n *Node) *stageCollector {
	return &stageCollector{n: n,
		stage: prometheus.NewDesc(MetricCommitStageSeconds,
			"Commit-round stage times on this node: queue, raft, reply (the leader's batches), "+
				"leader_persist and follower_persist (the log store's StoreLogs while leading or following).",
			[]string{"stage"}, nil),
		replication: prometheus.NewDesc(MetricReplicationRPCSeconds,
			"Round trip of the AppendEntries RPCs carrying entries that this node sent as leader, by follower.",
			[]string{"peer"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *stageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.stage
	ch <- c.replication
}

// Collect implements prometheus.Collector.
func (c *stageCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.n.seq.StageTimings()
	for _, s := range []struct {
		name string
		h    sequencer.StageHistogram
	}{{"queue", st.Queue}, {"raft", st.Raft}, {"reply", st.Reply},
		{"leader_persist", st.LeaderPersist}, {"follower_persist", st.FollowerPersist}} {
		ch <- stageHistogram(c.stage, s.h, s.name)
	}
	peers := make([]string, 0, len(st.Replication))
	for p := range st.Replication {
		peers = append(peers, p)
	}
	slices.Sort(peers)
	for _, p := range peers {
		ch <- stageHistogram(c.replication, st.Replication[p], p)
	}
}

// stageHistogram converts h to a Prometheus histogram with cumulative buckets.
func stageHistogram(d *prometheus.Desc, h sequencer.StageHistogram, label string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(sequencer.StageBuckets))
	var cum uint64
	for i, le := range sequencer.StageBuckets {
		cum += h.Counts[i]
		buckets[le.Seconds()] = cum
	}
	return prometheus.MustNewConstHistogram(d, h.Count, h.Sum.Seconds(), buckets, label)
}
