// Package node is one running Lockstep node: the assembly of the Raft sequencer
// (package sequencer), the replicated state machine (package replica) and the servers
// that face the world. A Go program runs a node as a library with its own procedures next
// to the built-ins; package node/runner puts it behind `lockstep node`'s flags, config
// file, signals and automatic rebuild, for the lockstep binary and for a node binary of
// one's own (examples/customproc).
//
// A node, once started:
//
//  1. checks its data directory's identity (identity.go: a directory whose log is lost,
//     damaged or another node's is refused) and, through the sequencer, every log
//     entry's and snapshot's checksum; then opens its Raft log and snapshots and replays
//     them into a fresh state machine (state lives in memory and is rebuilt from the log:
//     no checkpoints). A node whose identity the cluster has not confirmed holds its votes;
//  2. serves the client protocol (server.go): it validates each request, computes the
//     partition of its key, and hands writes and linearizable reads to the sequencer when
//     it leads — a follower answers NotLeader with the leader's client address, it never
//     forwards — and serves reads at consistency Any and stream reads from its own
//     applied state;
//  3. when it becomes leader, commits an entry of its term, records the cluster's
//     identity on a new cluster and the members' addresses, and only then takes writes
//     (leading);
//  4. runs membership changes on the leader (join as a learner after checking the
//     newcomer's partition count, procedure set, incarnation and the live quorum; the
//     promotion of caught-up learners to voters, learners.go; remove; leadership
//     transfer), and joins a cluster itself through the client library when started with
//     Join;
//  5. compares its hash-check records with its peers' every HashCompareInterval, through
//     the client library on kept connections, and stops serving — and leading — when a
//     majority disagrees with it (DESIGN.md invariant 6); it then asks the leader to
//     rebuild it (rebuild.go): demoted, it announces RebuildRequested, and its owner closes
//     it, discards its state with PrepareRebuild and starts it again, to install a healthy
//     replica's snapshot and be promoted back once its hashes are verified;
//  6. decides readiness by one rule (Readiness) that /readyz, /status, the lockstep_ready
//     metric and `lockstep cluster status` all report, and exports Prometheus metrics;
//  7. translates every lower layer's error into the wire catalogue in one place
//     (errors.go);
//  8. speaks mutual TLS 1.3 on every port with Config.CertsDir (tls.go, raft_tls.go): Raft
//     gets only connections from node certificates of the cluster's CA, the client and
//     admin ports node or client certificates, each client connection knows its peer's
//     Identity, and ReloadCerts (SIGHUP) renews them; without certificates a node runs
//     only with Config.Insecure, and says so in its status;
//  9. serves backups of its applied state to admins (backup.go, wire.OpBackup), and, offline,
//     Restore makes a new cluster's data directories from one (restore.go), as Recover
//     rewrites a stopped node's membership.
//
// Usage:
//
//	n, err := node.Start(node.Config{ID: "n1", DataDir: dir, CertsDir: "/etc/lockstep/certs",
//		RaftAddr: "127.0.0.1:7001", ClientAddr: "127.0.0.1:8001", Bootstrap: peers},
//		procedures.Builtins())
//	if err != nil { ... }
//	defer n.Close()
//
// LocalCluster starts several real nodes in one process (Raft over loopback TCP, fsynced
// logs in a temp dir, a throw-away CA unless told otherwise) for the demo, benchmarks and
// tests; ClientConfig gives a client its addresses and certificate.
//
// Contract: every node of a cluster runs the same procedure registry and partition count
// (a node refuses a cluster whose differ); the owner of a node acts on RebuildRequested
// (Close, PrepareRebuild, Start), as `lockstep node` and LocalCluster.RebuildNode do, or
// a divergent node, once demoted, stays a non-voter; Close stops every goroutine the node started
// and closes its storage; the client-protocol server depends on the sequencer and the
// replica only through the proposer and stateMachine contracts (consumed.go).
package node
