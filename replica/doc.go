// Package replica is one Lockstep replica: the Raft state machine that applies the
// sequencer's batches to the partition engine with exactly-once client sessions, and the
// Node that assembles sequencer, state machine and client listener into a server.
//
// For every committed log entry the FSM does, on every replica, in log order:
//
//  1. decode the batch (internal/batch) and clamp its time so it never goes backwards;
//  2. expire idle sessions by batch time (never by the local clock);
//  3. for each invoke, look up its session: a retried (session, seq) is answered from the
//     session's result cache and not run again (DESIGN.md invariant 3); a request to an
//     expired session fails without running;
//  4. run the remaining inputs through the partition engine, serially per partition;
//  5. cache each result under its session until the client acknowledges it, and hand the
//     results back through raft's ApplyFuture to the node that proposed the entry;
//  6. at a hash-check item, record the partition hashes, which nodes compare with their
//     peers' to detect a divergent replica (invariant 6).
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
