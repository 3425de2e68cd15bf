// Package jepsen is Lockstep's fault-injection harness: it checks the database's claims —
// no acknowledged input lost, nothing executed twice, linearizable by default, replicas
// identical — the way Jepsen checks databases: real processes, real faults, recorded
// histories, independent checkers.
//
// A run (Run, or `lockstep jepsen run`):
//
//  1. starts N real `lockstep node` processes on 127.0.0.1 (Cluster), each with its own
//     data directory, log and clock file, and a Network that makes the network faults:
//     as root, IPTablesNet (each node runs as its own uid, and cuts and loss are rules
//     in an iptables chain the run creates and always removes), else ProxyNet (every
//     directed Raft link and every worker's path to every node routed through a
//     fault-injecting TCP proxy of the harness); SelectNet picks, Config.Net overrides;
//  2. runs Workers clients of a Workload (register, bank, counter, set, voter,
//     session-expiry, pipeline), each with its own client and session, recording every operation
//     with its outcome (ok, fail, unknown) into a history (Recorder);
//  3. meanwhile applies a nemesis Schedule drawn from the seed: network shapes (one node
//     or the leader isolated, halves, bridge, one-way cuts, the majorities ring, delay,
//     slow links, loss), client cuts (from a minority, with an isolated old leader,
//     answers lost, idling past the session TTL), kill -9, SIGSTOP, power loss of all
//     nodes, clock skew and jumps, node replacement and leadership transfer — each
//     healed before the next;
//  4. heals and restarts everything, checks the history (porcupine for the register,
//     invariants for the others), the replicas' state hashes, unexpected exits and the
//     node logs, and writes a results folder.
//
// The nodes learn their faults from test-only environment variables that `lockstep
// node` reads (LOCKSTEP_FAULT_RAFT_ROUTES on the proxy backend, LOCKSTEP_FAULT_CLOCK_FILE,
// and LOCKSTEP_FAULT_CRASH_STORE for a Raft log that loses unsynced writes at a kill);
// only the iptables backend needs root. Planted bugs behind build tags (internal/planted: jepsen_lostwrite,
// jepsen_clockbug, jepsen_staleread, jepsen_nodedup, jepsen_nosync, jepsen_ackcache) prove
// the checkers can fail. See
// docs/jepsen.md.
//
// Contract: a Cluster is controlled from one goroutine; Run owns every process and
// goroutine it starts and ends them before it returns.
package jepsen
