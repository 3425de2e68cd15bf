// Package benchmarks holds Lockstep's workloads and load generators: closed-loop drivers
// that keep a fixed number of requests in flight through the client library and record
// every latency in an HDR histogram. The cluster benchmarks in this package's tests start
// real clusters on loopback (fsync on) and drive them; RESULTS.md records what they
// measured and the command that made them.
package benchmarks
