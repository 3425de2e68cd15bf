// Package runner runs a Lockstep node as `lockstep node` does, for the lockstep binary and
// for a custom node binary that registers its own procedures (docs/procedures.md,
// "Embedding: your own node binary"): the node flags and the --config file (Flags,
// ConfigFromFlags), and Run, which starts the node and keeps it until a signal: SIGINT or
// SIGTERM shut it down, SIGHUP reloads its certificates, and a node that announces its
// automatic rebuild (its state diverged from the others') is closed and started again on
// a rebuilt data directory. Command is the `node` command over them, and Main the whole
// main function of a custom binary:
//
//	func main() {
//		runner.Main(func(nodeID string) *procedures.Registry {
//			r := procedures.Builtins()
//			procedures.MustRegister(r, "words.count", countWords)
//			return r
//		})
//	}
//
// The runner also reads the test-only fault-injection variables of internal/faultenv,
// which the process tests (tests/system, jepsen) set; a production node never sees them.
package runner
