package node

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sequencer"
)

// Metrics are a node's Prometheus collectors, in a registry of the node's own (no global
// state, so several nodes can run in one process).
type Metrics struct {
	// Registry holds every collector of the node; serve it with promhttp.HandlerFor.
	Registry *prometheus.Registry

	inputs       *prometheus.CounterVec
	entries      prometheus.Counter
	entryInputs  prometheus.Histogram
	applySeconds prometheus.Histogram

	sendFailures *sendFailures // responses the server could not queue

	subscriptions prometheus.Gauge       // live push subscriptions
	pushedRecords prometheus.Counter     // records pushed to subscribers
	authz         *prometheus.CounterVec // admin actions and refusals (roles.go)

	limits *limitMetrics // connections refused or closed by Limits (limits.go)
}

func newMetrics(n *Node) *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	m.authz = newAuthzMetrics(m.Registry)
	m.inputs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lockstep_inputs_total", Help: "Inputs applied by this replica, by procedure and outcome code.",
	}, []string{"procedure", "outcome"})
	m.entries = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "lockstep_log_entries_applied_total", Help: "Raft log entries (batches) applied by this replica.",
	})
	m.entryInputs = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: MetricBatchItems, Help: "Items per applied log entry (the sequencer's batch size).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14),
	})
	m.applySeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: MetricApplySeconds, Help: "Time to apply one group of committed log entries.",
		Buckets: prometheus.ExponentialBuckets(10e-6, 2, 16),
	})
	m.sendFailures = newSendFailures(m.Registry)
	m.Registry.MustRegister(newBuildInfoMetric())
	rebuildMetrics(m.Registry, &n.rebuild)
	m.limits = newLimitMetrics(m.Registry)
	m.subscriptions = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "lockstep_subscriptions", Help: "Live push subscriptions to stream partitions.",
	})
	m.pushedRecords = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "lockstep_subscription_records_pushed_total", Help: "Stream records pushed to subscribers.",
	})
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	// stageCounter exposes one stage of the leader's commit rounds (sequencer.Stats):
	// divided by lockstep_sequencer_batches_total (queue) or ..._round_batches_total
	// (raft, reply), it is the mean time per batch. It is the _sum of the stage's
	// lockstep_commit_stage_seconds histogram (stage_metrics.go), kept for dashboards.
	stageCounter := func(stage string, f func(sequencer.Stats) time.Duration) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "lockstep_sequencer_stage_seconds_total",
			Help:        "Time the leader's batches spent in each stage of the commit round: queue (waiting for a batch), raft (persist, replicate, commit, leader apply), reply (handing results to connections).",
			ConstLabels: prometheus.Labels{"stage": stage},
		}, func() float64 { return f(n.seq.Stats()).Seconds() })
	}
	m.Registry.MustRegister(m.inputs, m.entries, m.entryInputs, m.applySeconds, newProcessorCollector(n), newSourceCollector(n), newStageCollector(n),
		m.subscriptions, m.pushedRecords,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		gauge(MetricRaftIsLeader, "1 if this node is the Raft leader.", func() float64 { return b2f(n.seq.IsLeader()) }),
		gauge("lockstep_raft_term", "Current Raft term.", func() float64 { return float64(n.seq.Stats().Term) }),
		gauge("lockstep_raft_last_log_index", "Last Raft log index.", func() float64 { return float64(n.seq.Stats().LastLogIndex) }),
		gauge("lockstep_raft_commit_index", "Raft commit index.", func() float64 { return float64(n.seq.Stats().CommitIndex) }),
		gauge("lockstep_applied_index", "Last log index applied to the state machine.", func() float64 { return float64(n.fsm.Applied()) }),
		gauge("lockstep_sessions", "Open client sessions.", func() float64 { return float64(n.fsm.Sessions()) }),
		stageCounter("queue", func(st sequencer.Stats) time.Duration { return st.QueueTime }),
		stageCounter("raft", func(st sequencer.Stats) time.Duration { return st.RaftTime }),
		stageCounter("reply", func(st sequencer.Stats) time.Duration { return st.ReplyTime }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "lockstep_sequencer_batches_total",
			Help: "Batches this node proposed as leader (given to Raft)."}, func() float64 { return float64(n.seq.Stats().Batches) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "lockstep_sequencer_round_batches_total",
			Help: "Batches this node's raft and reply stage times are summed over (those that committed)."},
			func() float64 { return float64(n.seq.Stats().RoundBatches) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "lockstep_read_index_rounds_total",
			Help: "Read-index rounds this node ran as leader (one leadership confirmation each, shared by the reads waiting)."},
			func() float64 { return float64(n.reads.rounds.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "lockstep_read_index_reads_total",
			Help: "Reads (linearizable ones, and followers' read-index requests) served by this node's read-index rounds."},
			func() float64 { return float64(n.reads.served.Load()) }),
		gauge("lockstep_batch_time_ahead_seconds", "How far the latest batch time this node applied or stamped runs ahead of its clock (0 when it does not): on a leader, the lead it is closing by advancing batch time at half speed; on a follower, how far the leader's clock runs ahead of this node's.",
			func() float64 { return n.seq.Stats().BatchTimeAhead.Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "lockstep_batch_time_slowed_batches_total",
			Help: "Entries this node stamped as leader while its clock was behind batch time (their batch time advanced at half the clock's speed)."},
			func() float64 { return float64(n.seq.Stats().SlowedBatches) }),
		gauge("lockstep_sequencer_queue_depth", "Inputs waiting for the sequencer's next batch.", func() float64 { return float64(n.seq.Stats().QueueDepth) }),
		gauge("lockstep_divergent", "1 if this replica found its state differs from its peers'.", func() float64 { return b2f(n.fsm.Divergent() != nil) }),
		gauge("lockstep_raft_bytes_since_snapshot", "Bytes of log entries applied since this node's last snapshot.", func() float64 { return float64(n.seq.Stats().BytesSinceSnapshot) }),
		gauge("lockstep_raft_last_snapshot_bytes", "Size of this node's last snapshot; the next waits for as many bytes of log.", func() float64 { return float64(n.seq.Stats().LastSnapshotBytes) }),
		gauge("lockstep_raft_byte_snapshots", "Snapshots this node took because the log's bytes passed the threshold, since start.", func() float64 { return float64(n.seq.Stats().ByteSnapshots) }),
		gauge("lockstep_learner", "1 if this node is a learner (a non-voter waiting for promotion).", func() float64 { return b2f(n.seq.Suffrage() == sequencer.SuffrageLearner) }),
		gauge("lockstep_ready", "1 if this node is ready to take traffic (as /readyz).", func() float64 { return b2f(n.Readiness() == nil) }),
		gauge("lockstep_client_connections", "Open client connections.", func() float64 {
			n.mu.Lock()
			defer n.mu.Unlock()
			return float64(len(n.conns))
		}),
	)
	return m
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// ObserveApply implements replica.ApplyObserver: it moves one apply's counts into the
// collectors. The FSM aggregates per apply, so the hot path touches a small map instead of
// a labelled Prometheus counter per input.
func (m *Metrics) ObserveApply(s *replica.ApplyStats) {
	for k, v := range s.Outcomes {
		m.inputs.WithLabelValues(k.Procedure, k.Code.String()).Add(float64(v))
	}
	m.entries.Add(float64(len(s.EntryItems)))
	for _, n := range s.EntryItems {
		m.entryInputs.Observe(float64(n))
	}
	m.applySeconds.Observe(s.Took.Seconds())
}
