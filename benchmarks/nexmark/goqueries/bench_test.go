package goqueries

import (
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/replica"
)

// BenchmarkQueries measures each query's processors on the partition engine alone (one
// replica FSM in process, partitions in parallel, no Raft, no network, no fsync): the
// CPU a replica spends per event on the query, the appends included. events/cpu-s is
// per second of the process's CPU time (user and system, all threads, GC included) while
// the log applies: the rate per core, and less at the mercy of other load on the machine
// than events/s. Compare with
// `lockstep bench nexmark`, which adds the cluster around it.
//
//	go test -run XXX -bench Queries ./benchmarks/nexmark/goqueries
func BenchmarkQueries(b *testing.B) {
	const events = 20_000
	gen, err := nexmark.New(nexmark.Config{Events: events, Rate: 10_000})
	if err != nil {
		b.Fatal(err)
	}
	evs, _ := gen.Slice(0, events)
	logs := buildLog(evs, 500)
	for _, q := range append([]string{"none"}, Queries...) {
		b.Run(q, func(b *testing.B) {
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				r := procedures.Builtins()
				if q != "none" {
					if err := Register(r, DefaultConfig(), q); err != nil {
						b.Fatal(err)
					}
				}
				f, err := replica.New(replica.Config{Partitions: testParts}, r, slog.New(slog.DiscardHandler))
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				c0 := cpuTime()
				for _, l := range logs {
					f.ApplyBatch(logs[l.Index-1 : l.Index])
				}
				cpu += cpuTime() - c0
				b.StopTimer()
				f.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(events)*float64(b.N)/cpu.Seconds(), "events/cpu-s")
		})
	}
}

// cpuTime is the CPU time this process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
