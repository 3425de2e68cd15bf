// Package loadgen is Lockstep's load engine: it runs a request function from many workers
// for a warm-up and a measured duration and reports throughput, HDR-histogram latency
// percentiles, errors by type and a per-second timeline. `lockstep bench`, the benchmarks
// in package benchmarks and the peer comparison in benchmarks/peers (its own module) all
// drive their systems through it.
//
// A run:
//
//  1. Validate the Config (Workers, Duration, Op; Rate for open loop).
//  2. Start Workers goroutines. Closed loop (Rate 0): each keeps one request outstanding,
//     starting the next when the last one returns. Open loop (Rate > 0): requests are
//     scheduled at fixed intended start times, Rate per second over the whole run, and a
//     free worker takes the next one; a request's latency is measured from its intended
//     start, so time spent queued behind slow requests counts (no coordinated omission).
//     Scheduled requests no worker could start before the end are reported as Missed.
//  3. Discard what completes in the first Warmup, then record Duration's worth.
//  4. Once a second, close a window: its throughput and percentiles go to the Timeline
//     and to Config.Progress.
//  5. Stop starting requests at the end, wait for those in flight, and return the Result.
//
// Usage:
//
//	res, err := loadgen.Run(ctx, loadgen.Config{Workers: 64, Duration: 10 * time.Second, Op: op})
//
// Op is called from many goroutines at once; it must be safe for that, and it should
// return when ctx ends.
//
// The Lockstep workloads (Workload, NewWorkload: counter, kv, voter, transfer, append)
// turn a pool of client.Client connections into an Op.
package loadgen
