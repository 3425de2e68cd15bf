package node

// Names of the node's metrics that other programs read (lockstep bench's report in
// benchmarks/report, the benchmarks): the string contract between the node and its
// readers, written once.
const (
	// MetricBatchItems is the histogram of items per applied log entry (the sequencer's
	// batch size), the same on every replica.
	MetricBatchItems = "lockstep_batch_items"
	// MetricApplySeconds is the histogram of the time to apply one group of committed
	// log entries.
	MetricApplySeconds = "lockstep_apply_seconds"
	// MetricCommitStageSeconds is the histogram of the commit round's stages, by label
	// stage: queue, raft, reply, leader_persist, follower_persist.
	MetricCommitStageSeconds = "lockstep_commit_stage_seconds"
	// MetricReplicationRPCSeconds is the histogram of the round trips of the
	// AppendEntries RPCs a leader sent, by label peer.
	MetricReplicationRPCSeconds = "lockstep_replication_rpc_seconds"
	// MetricRaftIsLeader is the gauge that is 1 while the node is the Raft leader.
	MetricRaftIsLeader = "lockstep_raft_is_leader"
	// MetricSourceLag is the gauge of a source's lag per Kafka partition (label source,
	// topic, partition), exported by the node whose worker reads the partition.
	MetricSourceLag = "lockstep_source_lag_records"
)
