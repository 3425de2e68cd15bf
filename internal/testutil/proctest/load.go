package proctest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
)

// CounterLoad adds to per-worker counters until stopped, counting acknowledged adds and
// adds whose outcome is unknown, and the longest time without an acknowledgement. Read
// Acked and Unknown after Halt.
type CounterLoad struct {
	// Client is the load's client (root, the shared test certificates).
	Client *client.Client
	// Acked and Unknown count, per worker, the acknowledged adds and those whose outcome
	// is unknown.
	Acked, Unknown []int64
	// Total counts the acknowledged adds of all workers.
	Total atomic.Int64
	// Prefix and Workers name the counters: worker w adds to Prefix followed by w.
	Prefix  string
	Workers int

	stop       atomic.Bool
	wg         sync.WaitGroup
	mu         sync.Mutex
	last       time.Time
	longestGap time.Duration
}

// StartLoad starts workers adders of a CounterLoad on the cluster at addrs (keys prefix0,
// prefix1, ...), halted when the test ends or ctx does.
func StartLoad(t testing.TB, ctx context.Context, addrs []string, prefix string, workers int) *CounterLoad {
	t.Helper()
	cl, err := client.Dial(ctx, client.Config{Addrs: addrs, MaxRetries: -1, TLS: TLS()})
	if err != nil {
		t.Fatal(err)
	}
	l := &CounterLoad{Client: cl, Acked: make([]int64, workers), Unknown: make([]int64, workers), last: time.Now(),
		Prefix: prefix, Workers: workers}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for !l.stop.Load() {
				actx, cancel := context.WithTimeout(ctx, 30*time.Second)
				_, err := cl.CounterAdd(actx, fmt.Sprintf("%s%d", prefix, w), 1)
				cancel()
				if err != nil {
					l.Unknown[w]++
					continue
				}
				l.Acked[w]++
				l.Total.Add(1)
				now := time.Now()
				l.mu.Lock()
				l.longestGap = max(l.longestGap, now.Sub(l.last))
				l.last = now
				l.mu.Unlock()
			}
		}()
	}
	t.Cleanup(func() { l.Halt(); cl.Close() })
	return l
}

// LoadedCluster starts a 3-node cluster of processes under a counter load of workers
// adders (keys prefix0, prefix1, ...) and waits for acked adds. ctx ends after timeout,
// or when the test ends, before the load's and the cluster's cleanups run.
func LoadedCluster(t testing.TB, timeout time.Duration, prefix string, workers int, acked int64) (bin string, c *Cluster, ctx context.Context, load *CounterLoad) {
	t.Helper()
	bin = BuildBinary(t)
	c = StartCluster(t, bin, 3)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	load = StartLoad(t, ctx, strings.Split(c.AddrFlag(), ","), prefix, workers)
	t.Cleanup(cancel)
	load.WaitAcked(t, acked)
	return bin, c, ctx, load
}

// WaitAcked waits until n more adds are acknowledged.
func (l *CounterLoad) WaitAcked(t testing.TB, n int64) {
	t.Helper()
	from := l.Total.Load()
	testutil.WaitFor(t, 60*time.Second, func() error {
		if got := l.Total.Load() - from; got < n {
			return fmt.Errorf("%d of %d adds acknowledged", got, n)
		}
		return nil
	})
}

// Halt stops the workers and waits for them.
func (l *CounterLoad) Halt() {
	l.stop.Store(true)
	l.wg.Wait()
}

// LongestGap is the longest time yet without an acknowledgement.
func (l *CounterLoad) LongestGap() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.longestGap
}

// Check verifies every counter (read linearizably through cl) holds its acknowledged
// adds plus at most the unknown ones (DESIGN.md invariants 3 and 4).
func (l *CounterLoad) Check(t testing.TB, ctx context.Context, cl *client.Client) {
	t.Helper()
	for w := range l.Workers {
		got, err := cl.CounterGet(ctx, fmt.Sprintf("%s%d", l.Prefix, w))
		if err != nil {
			t.Fatalf("#%d: counter.get: %v", w, err)
		}
		if got < l.Acked[w] || got > l.Acked[w]+l.Unknown[w] {
			t.Errorf("#%d: counter %d, want %d acknowledged + at most %d unknown", w, got, l.Acked[w], l.Unknown[w])
		}
	}
}
