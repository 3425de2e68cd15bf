// Package system holds Lockstep's process-level tests: each starts real `lockstep node`
// processes on loopback ports the OS chose (through internal/testutil/proctest, the
// harness it shares with cmd/lockstep's tests: a jepsen.Cluster, or a jepsen.Process for a
// node with flags of its own) and checks what a user of the binary sees — the node
// lifecycle (join, remove, replace, recover), security (TLS, certificates, authorization),
// resource limits, a frozen or SIGKILLed node, damaged data, rebuilds, a partitioned read
// replica, custom procedures, a client on the wrong port, advertised addresses and the
// probe port, the sink, and a rolling upgrade across two builds of one application (examples/upgradeapp). The tests of the
// command line itself (flags, output) stay with the command, in cmd/lockstep. The package
// has no code besides this comment; run its tests one file at a time
// (`go test -run TestX ./tests/system`): they are slow.
package system
