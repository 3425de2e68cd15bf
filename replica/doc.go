// Package replica is one Lockstep replica: the Raft state machine that applies the
// sequencer's batches to the partition engine with exactly-once client sessions, and the
// Node that assembles sequencer, state machine and client listener into a server.
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
//     table, cluster and node info, which nodes compare with their peers' to detect a
//     divergent replica (invariant 6).
//
// Raft hands the FSM committed entries in groups of any size, different on every
// replica; the FSM runs a group's inputs in as few engine calls as it can, yet every
// result and the whole session table depend on the log alone, never on the grouping.
//
// A Node serves clients over the wire protocol. Writes and linearizable reads go through
// the log on the leader; a follower answers NotLeader with the leader's client address
// (it never forwards), and the client goes there. Reads at consistency Any run locally on
// any ready replica. A node refuses to serve when its partition count or procedure set
// differs from the cluster's, or when it has diverged.
//
// Usage:
//
//	node, err := replica.StartNode(replica.NodeConfig{ID: "n1", DataDir: dir,
//		RaftAddr: "127.0.0.1:7001", ClientAddr: "127.0.0.1:8001", Bootstrap: peers},
//		procedures.Builtins())
//	...
//	defer node.Close()
//
// Contract: every node of a cluster runs the same procedure registry and partition count;
// the state machine's state lives in memory and is rebuilt on restart by replaying the
// durable log after the last compaction snapshot (RAFT-NOTES: never persist it apart from
// the applied index).
package replica
