package benchmarks

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/latency"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// subLatency measures one subscription's end-to-end latency: from the moment the
// producer's Append returned (the append acknowledged) to the moment Next handed the
// record to the subscriber. Either event may come first (a replica can push a record
// before the leader's answer reaches the producer); the second one records the interval,
// 0 if the record arrived first.
type subLatency struct {
	mu       sync.Mutex
	acked    map[[2]uint64]time.Time // (partition, offset) → ack time, record not yet received
	received map[[2]uint64]bool      // received before its ack
	rec      *latency.Recorder
	early    int64 // records received before their ack
}

func newSubLatency() *subLatency {
	return &subLatency{acked: map[[2]uint64]time.Time{}, received: map[[2]uint64]bool{}, rec: latency.New()}
}

func (s *subLatency) ack(k [2]uint64, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.received[k] {
		delete(s.received, k)
		s.rec.Record(0)
		return
	}
	s.acked[k] = at
}

func (s *subLatency) receive(k [2]uint64, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.acked[k]; ok {
		delete(s.acked, k)
		s.rec.Record(at.Sub(t))
		return
	}
	s.received[k] = true
	s.early++
}

// BenchmarkSubscribeLatencyProcs measures subscriber end-to-end latency (append
// acknowledged → record received) on 3 `lockstep node` processes. Producers append one
// 100-byte record at a time to a stream of every partition; three SubscribeAll
// subscribers, each on its own client whose first candidate is a different node (so one
// is served by the leader, two by followers), run in this process. Target (issue 10):
// p99 ≤ 10 ms.
//
//   - Load: 16 producers in a closed loop (LOCKSTEP_BENCH_PRODUCERS sets another count).
//   - Sparse: one producer, one append every 20 ms: a follower learns that an entry is
//     committed only from the leader's next AppendEntries, which an idle leader sends
//     every sequencer.Config.CommitTimeout.
func BenchmarkSubscribeLatencyProcs(b *testing.B) {
	producers := 16
	if n, err := strconv.Atoi(os.Getenv("LOCKSTEP_BENCH_PRODUCERS")); err == nil && n > 0 {
		producers = n
	}
	b.Run("Load", func(b *testing.B) { benchSubscribeLatency(b, producers, 0) })
	b.Run("Sparse", func(b *testing.B) { benchSubscribeLatency(b, 1, 20*time.Millisecond) })
}

// benchSubscribeLatency runs producers, each pausing pace between appends (0: none).
func benchSubscribeLatency(b *testing.B, producers int, pace time.Duration) {
	if b.N > 1 {
		b.Skip("runs once: use -benchtime 1x")
	}
	const subscribers, stream = 3, "sub.bench"
	ctx := context.Background()
	pc := startProcs(b, 3)
	addrs := pc.clientAddrs()
	cl := pc.dial(b)
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: stream, Retention: builtin.StreamRetention{MaxRecords: 100_000}}); err != nil {
		b.Fatal(err)
	}
	desc, err := cl.Streams().Describe(ctx, stream)
	if err != nil {
		b.Fatal(err)
	}
	parts := len(desc.Partitions)

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var subsWG sync.WaitGroup
	lats := make([]*subLatency, subscribers)
	var subErr atomic.Pointer[error]
	for i := range lats {
		lats[i] = newSubLatency()
		rotated := append(append([]string{}, addrs[1+i:]...), addrs[:1+i]...)
		sc, err := client.Dial(ctx, client.Config{Addrs: rotated, TLS: testutil.ClientTLS(b)})
		if err != nil {
			b.Fatal(err)
		}
		defer sc.Close()
		sub, err := sc.SubscribeAll(ctx, stream, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Close()
		subsWG.Add(1)
		go func() {
			defer subsWG.Done()
			for {
				recs, err := sub.Next(runCtx)
				if err != nil {
					if runCtx.Err() == nil {
						subErr.Store(&err)
					}
					return
				}
				now := time.Now()
				for _, r := range recs {
					lats[i].receive([2]uint64{uint64(r.Partition), r.Offset}, now)
				}
			}
		}()
	}
	var serving []string
	for _, n := range pc.nodes {
		serving = append(serving, fmt.Sprintf("%s %.0f", n.id, n.metrics()["lockstep_subscriptions"]))
	}

	value := make([]byte, 100)
	var appended, appendErrs atomic.Int64
	appendLat := latency.New()
	produce := func(d time.Duration, measure bool) {
		deadline := time.Now().Add(d)
		var wg sync.WaitGroup
		for w := range producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; time.Now().Before(deadline); i++ {
					key := fmt.Sprintf("p%d-%d", w, i%64)
					start := time.Now()
					off, err := cl.Append(ctx, stream, []byte(key), value)
					now := time.Now()
					if err != nil {
						if appendErrs.Add(1) == 1 {
							b.Logf("first append error: %v", err)
						}
						continue
					}
					k := [2]uint64{uint64(partition.PartitionOf([]byte(key), parts)), off}
					for _, l := range lats {
						l.ack(k, now)
					}
					if measure {
						appended.Add(1)
						appendLat.Record(now.Sub(start))
					}
					if pace > 0 {
						time.Sleep(pace) // load shaping: the sparse case
					}
				}
			}()
		}
		wg.Wait()
	}
	produce(2*time.Second, false) // warm up
	for _, l := range lats {
		l.rec.Take()
	}
	cpu0, self0 := pc.cpu(), selfCPU()
	began := time.Now()
	b.ResetTimer()
	produce(benchDuration(), true)
	b.StopTimer()
	secs := time.Since(began).Seconds()
	cpu1, self1 := pc.cpu(), selfCPU()
	testutil.WaitFor(b, 10*time.Second, func() error { // the last records' pushes
		for i, l := range lats {
			l.mu.Lock()
			n := len(l.acked)
			l.mu.Unlock()
			if n > 0 {
				return fmt.Errorf("subscriber %d: %d acknowledged records not received", i, n)
			}
		}
		return nil
	})
	stop()
	subsWG.Wait()
	if p := subErr.Load(); p != nil {
		b.Fatalf("subscriber: %v", *p)
	}
	all := latency.New()
	var lines []string
	for i, l := range lats {
		l.mu.Lock()
		s := l.rec.Summary()
		lines = append(lines, fmt.Sprintf("subscriber %d: %d records, p50 %v, p99 %v, p999 %v, max %v, %d pushed before their ack, %d acked not received",
			i, s.Count, s.P50, s.P99, s.P999, s.Max, l.early, len(l.acked)))
		all.Merge(l.rec)
		l.mu.Unlock()
	}
	s := all.Summary()
	a := appendLat.Summary()
	var cpus string
	for i := range cpu1 {
		cpus += fmt.Sprintf("%s %.0f%%, ", pc.nodes[i].id, 100*(cpu1[i]-cpu0[i]).Seconds()/secs)
	}
	b.ReportMetric(float64(appended.Load())/secs, "appends/s")
	b.ReportMetric(float64(s.P50.Microseconds())/1000, "sub-p50-ms")
	b.ReportMetric(float64(s.P99.Microseconds())/1000, "sub-p99-ms")
	b.ReportMetric(float64(a.P99.Microseconds())/1000, "append-p99-ms")
	b.Logf("%d appends in %.1fs (%.0f/s, %d errors), append latency p50 %v p99 %v; subscriptions per node at start: %s; CPU of 200%%: %sclient process %.0f%%\n%s",
		appended.Load(), secs, float64(appended.Load())/secs, appendErrs.Load(), a.P50, a.P99, strings.Join(serving, ", "),
		cpus, 100*(self1-self0).Seconds()/secs, strings.Join(lines, "\n"))
}
