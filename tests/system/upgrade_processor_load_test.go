package system

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
)

// playKeys is how many keys the play load spreads its records over: enough to reach
// every partition, few enough that each key gets many records.
const playKeys = 12

// playLoad is a bounded, steady load on stream "plays": workers each append one record at
// a time, at most every pace, through the client's exactly-once append (retried with the
// same session number, so it runs once), cycling over playKeys keys, until halted. Every
// acknowledged append is counted per key, every failure kept, so the test can compare the
// processor's counts with what the cluster acknowledged.
type playLoad struct {
	stop  atomic.Bool
	wg    sync.WaitGroup
	acked atomic.Int64

	mu     sync.Mutex
	perKey map[string]int64 // acknowledged appends by key
	failed []string         // every append that failed, with its error
}

// startPlayLoad starts the load on the cluster at addrs; it is halted when the test ends.
func startPlayLoad(t *testing.T, ctx context.Context, addrs []string, workers int, pace time.Duration) *playLoad {
	t.Helper()
	// Unbounded retries: the client moves between nodes as they restart; only a
	// request's own deadline ends it.
	cl, err := client.Dial(ctx, client.Config{Addrs: addrs, MaxRetries: -1, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	l := &playLoad{perKey: map[string]int64{}}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			tick := time.NewTicker(pace)
			defer tick.Stop()
			for i := 0; !l.stop.Load(); i++ {
				key := fmt.Sprintf("fan-%d", (w+i*workers)%playKeys)
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				_, err := cl.Append(rctx, playsStream, []byte(key), []byte(fmt.Sprintf("w%d-%d", w, i)))
				cancel()
				l.mu.Lock()
				if err != nil {
					l.failed = append(l.failed, fmt.Sprintf("worker %d append %d (%s): %v", w, i, key, err))
				} else {
					l.perKey[key]++
				}
				l.mu.Unlock()
				if err == nil {
					l.acked.Add(1)
				}
				select {
				case <-tick.C:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	t.Cleanup(func() { l.halt(); cl.Close() })
	return l
}

// waitAcked waits until n more appends were acknowledged.
func (l *playLoad) waitAcked(t *testing.T, n int64) {
	t.Helper()
	from := l.acked.Load()
	testutil.WaitFor(t, 60*time.Second, func() error {
		if got := l.acked.Load() - from; got < n {
			l.mu.Lock()
			defer l.mu.Unlock()
			return fmt.Errorf("%d of %d more appends acknowledged; %d failed so far", got, n, len(l.failed))
		}
		return nil
	})
}

// halt stops the workers and waits for them.
func (l *playLoad) halt() {
	l.stop.Store(true)
	l.wg.Wait()
}

// check verifies, after halt, that no append failed, and returns the acknowledged
// appends by key.
func (l *playLoad) check(t *testing.T) map[string]int64 {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.failed {
		t.Errorf("failed append: %s", f)
	}
	return maps.Clone(l.perKey)
}
