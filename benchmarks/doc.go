// Package benchmarks holds Lockstep's cluster benchmarks. They drive clusters through the
// load engine of package loadgen (Run here adapts it: closed-loop drivers that keep a
// fixed number of requests in flight through the client library and record every latency
// in an HDR histogram). The cluster benchmarks in this package's tests start
// real clusters on loopback (fsync on) and drive them: the *Procs benchmarks as `lockstep
// node` processes (built once by the test binary) with the benchmark process as the
// client, the others in process so that they can profile or measure the heap. RESULTS.md
// records what they measured and the command that made them. The Nexmark benchmark lives
// in benchmarks/nexmark (the generator and the queries' batch reference), its goqueries
// (the queries as processors) and feed (the appender of `lockstep bench nexmark`).
package benchmarks
