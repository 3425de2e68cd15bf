// Package replica is Lockstep's replicated state machine: the Raft FSM that applies the
// sequencer's batches to the partition engine with exactly-once client sessions. It knows
// nothing of the network or of Raft's transport: package node assembles it with the
// sequencer and the client listener into a server. It imports partition, procedures and
// internal/batch only; its outcome codes (Code, Error) are its own, and node maps them to
// the wire.
//
// For every committed log entry the FSM does, on every replica, in log order:
//
//  1. decode the batch (internal/batch) and clamp its time so it never goes backwards;
//  2. expire idle sessions by batch time (never by the local clock);
//  3. for each invoke, look up its session and free the results it acknowledges: a
//     retried (session, seq) is answered from the session's result cache and not run
//     again (DESIGN.md invariant 3); a request to an expired session, one already
//     acknowledged, or one past the session's window or result-byte bound fails without
//     running;
//  4. run the remaining inputs through the partition engine, serially per partition;
//  5. cache each result under its session unless the client acknowledged it meanwhile,
//     and hand the results back through raft's ApplyFuture to the node that proposed the
//     entry;
//  6. at a hash-check item, record the partition hashes and the meta hash of the session
//     table, cluster and node info, users and cluster configuration, which nodes compare
//     with their peers' to detect a divergent replica (invariant 6);
//  7. at a cluster configuration item, change the replicated settings (session limits,
//     result limit, processor budgets: ClusterConfig) from that item on.
//
// Raft hands the FSM committed entries in groups of any size, different on every
// replica; the FSM runs each entry's inputs in one engine call (split at a hash check),
// before the entry's processor phase, so every result and the whole session table depend
// on the log alone, never on the grouping.
//
// Usage (the node does this; tests drive an FSM with log entries directly):
//
//	fsm, err := replica.New(replica.Config{Partitions: 4, Observer: metrics}, procedures.Builtins(), log)
//	...
//	seq, err := sequencer.Open(scfg, fsm) // Raft calls ApplyBatch, Snapshot, Restore
//	...
//	fsm.Applied(); fsm.Query(&in); fsm.HashRecords(); fsm.CompareHashes(peers)
//
// Contract: Raft calls ApplyBatch, Apply, Snapshot and Restore from one goroutine; the
// other methods are safe for concurrent use. Every node of a cluster runs the same
// procedure registry and partition count (checked at join); the settings that decide
// results are the log's (ClusterConfig), whatever each node's Config says;
// the state machine's state lives in memory and is rebuilt on restart by replaying the
// durable log after the last compaction snapshot (RAFT-NOTES: never persist it apart from
// the applied index).
package replica
