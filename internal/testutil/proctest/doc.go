// Package proctest is the harness of Lockstep's process-level tests, shared by the tests
// of cmd/lockstep and of tests/system: it builds the real binary once per build-tag set
// for the whole test binary (jepsen.BuildLockstep; remove the builds with Main), runs its
// commands (Run, MustRun, CheckFailure), starts `lockstep node` processes on loopback
// ports the OS chose — a bootstrapped Cluster on jepsen.Cluster's direct network (no
// fault injected), or one Node with flags of its own (SpawnNode) — and puts a cluster
// under a counter load (CounterLoad). Every process is killed, and every node's log
// checked for a data race, when its test ends. Nodes and commands use the shared test
// certificates (testutil.SharedCertsDir) unless given --certs-dir or --insecure.
//
// Only tests import it.
package proctest
