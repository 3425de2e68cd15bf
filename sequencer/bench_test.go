package sequencer

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/batch"
)

// BenchmarkSubmit1Node measures the throughput of a single-node cluster with fsync on:
// clients goroutines each submit one input and wait for its result before the next (a
// closed loop), so the batch size adapts to the load. It reports inputs/s, the mean batch,
// the p50 and p99 submit-to-Done latency, and logs the batch-size histogram. The delay
// variants show what Config.MaxBatchDelay buys.
func BenchmarkSubmit1Node(b *testing.B) {
	for _, bc := range []struct {
		clients int
		delay   time.Duration
	}{{1, 0}, {16, 0}, {128, 0}, {1024, 0}, {128, 200 * time.Microsecond}, {1024, time.Millisecond}} {
		b.Run(fmt.Sprintf("clients=%d/delay=%v", bc.clients, bc.delay), func(b *testing.B) {
			benchSubmit(b, bc.clients, bc.delay)
		})
	}
}

func benchSubmit(b *testing.B, clients int, delay time.Duration) {
	cfg := testConfig(b, "bench")
	solo(&cfg)
	cfg.MaxBatchDelay = delay
	cfg.Logger = testLogger(b, slog.LevelWarn)
	n := openNode(b, cfg, newTestFSM())
	if err := n.seq.Bootstrap([]Server{{ID: n.id, Addr: n.seq.Addr()}}); err != nil {
		b.Fatal(err)
	}
	waitLeader(b, []*node{n})
	before := n.seq.Stats()

	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for c := range clients {
		count := b.N / clients
		if c < b.N%clients {
			count++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan error, 1)
			p := &Proposal{
				Item: batch.Item{Kind: batch.KindInvoke, Procedure: "kv.put", Key: []byte("key-0001"), Args: []byte("value-0000000001")},
				Done: func(_ batch.Result, _ uint64, err error) { done <- err },
			}
			ls := make([]time.Duration, 0, count)
			for range count {
				t0 := time.Now()
				if err := n.seq.Submit(p); err != nil {
					b.Errorf("Submit: %v", err)
					return
				}
				if err := <-done; err != nil {
					b.Errorf("Done: %v", err)
					return
				}
				ls = append(ls, time.Since(t0))
			}
			lat[c] = ls
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()

	st := n.seq.Stats()
	batches, inputs := st.Batches-before.Batches, st.Inputs-before.Inputs
	for i := range st.BatchSizes {
		st.BatchSizes[i] -= before.BatchSizes[i]
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(inputs)/elapsed.Seconds(), "inputs/s")
	if batches > 0 {
		b.ReportMetric(float64(inputs)/float64(batches), "inputs/batch")
	}
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	}
	b.Logf("N=%d clients=%d: %d inputs in %d batches, histogram %s", b.N, clients, inputs, batches, st.HistogramString())
}
