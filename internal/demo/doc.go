// Package demo runs Lockstep's embedded demonstrations, the body of `lockstep demo`: a
// cluster started inside the process (real Raft over loopback, real fsynced logs in a
// temp dir removed afterwards, mutual TLS with a throw-away CA), a workload driven against
// it, the leader killed halfway, and a check at the end that what the clients were told
// matches what the cluster holds. As CockroachDB's pkg/cli/democluster does for `cockroach
// demo`, it holds the demo's logic so that the command keeps only its flags.
//
// A run (RunVoter or RunPipeline):
//
//  1. Validate the Config and start the cluster (node.StartLocalCluster) and a client of
//     it that retries without limit.
//  2. Prepare the workload: the Voter contest (benchmarks/loadgen's voter workload), or
//     the click pipeline's four streams.
//  3. Drive it for Config.Duration from Config.Clients clients, printing a live line a
//     second; with Config.Kill, kill the leader halfway and restart it after the drive.
//  4. Check exactly-once against what the clients were told (votes counted; per-window
//     click counts plus late clicks), and that every replica holds the same state hashes;
//     print a summary.
//
// Usage:
//
//	err := demo.RunVoter(ctx, demo.DefaultConfig(), os.Stdout)
//
// The returned error is nil only if the check passed; it wraps ErrCheckFailed if the
// check failed, and ErrBadConfig for an invalid Config. Output goes to the writer only.
package demo
