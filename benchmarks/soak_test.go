package benchmarks

import (
	"context"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/node"
)

// BenchmarkSoakHeap drives a 3-node cluster with 512 requests in flight for
// LOCKSTEP_SOAK_SECONDS (default 60; the check is 600) and samples the heap in use
// after a GC every 10% of the run. Nodes, clients and load share this process, so the
// figure bounds every node's heap together. Session result caches are freed as clients
// acknowledge, so the heap must level off instead of growing with the number of inputs.
func BenchmarkSoakHeap(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once: use -benchtime 1x")
	}
	d := 60 * time.Second
	if s, err := strconv.Atoi(os.Getenv("LOCKSTEP_SOAK_SECONDS")); err == nil && s > 0 {
		d = time.Duration(s) * time.Second
	}
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := node.Config{Logger: quiet}
	cfg.Sequencer.SnapshotThreshold = 8192 // as `lockstep node` runs by default
	c, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: 3, Dir: b.TempDir(), Node: cfg})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	heap := func() float64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapInuse) / (1 << 20)
	}
	done := make(chan Report, 1)
	go func() {
		r, err := Run(ctx, c.ClientAddrs(), Load{Clients: 8, Inflight: 512, Duration: d, Op: CounterAdd})
		if err != nil {
			b.Error(err)
		}
		done <- r
	}()
	var samples []float64
	tick := time.NewTicker(d / 10)
	defer tick.Stop()
	for len(samples) < 9 {
		<-tick.C
		samples = append(samples, heap())
		b.Logf("heap in use %.1f MiB, sessions %d", samples[len(samples)-1], c.Nodes[c.Leader()].FSM().Sessions())
	}
	r := <-done
	b.Logf("load: %s", r)
	b.ReportMetric(samples[0], "heap-first-MiB")
	b.ReportMetric(samples[len(samples)-1], "heap-last-MiB")
	b.ReportMetric(r.Throughput(), "inputs/s")
}
