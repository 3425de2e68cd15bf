package system

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
)

// scoreResult is examples/upgradeapp's score.add result: the version of the code that ran
// and the player's score after it.
type scoreResult struct {
	Version int   `msgpack:"version"`
	Score   int64 `msgpack:"score"`
}

// scorePoints is what version v of score.add adds (examples/upgradeapp), 0 for a version
// no build has.
func scorePoints(v int) int64 {
	switch v {
	case 1:
		return 1
	case 2:
		return 10
	}
	return 0
}

// scoreLoad is a bounded, steady load on score.add: workers each call it on their own
// player, one request at a time at most every pace, until halted. Every request is
// counted, and every result kept in order, so the test can check that none failed and
// that each one ran exactly once with the version it names.
type scoreLoad struct {
	cl      *client.Client
	workers int
	stop    atomic.Bool
	wg      sync.WaitGroup
	acked   atomic.Int64

	mu      sync.Mutex
	sent    []int           // requests each worker sent
	nfailed []int           // requests of each worker that failed
	results [][]scoreResult // the results each worker got, in order
	failed  []string        // every request that failed, with its error
}

// startScoreLoad starts the load on the cluster at addrs; it is halted when the test ends.
func startScoreLoad(t *testing.T, ctx context.Context, addrs []string, workers int, pace time.Duration) *scoreLoad {
	t.Helper()
	// Unbounded retries: the client moves between nodes as they restart, and retries with
	// the same session numbers (exactly once); only a request's own deadline ends it.
	cl, err := client.Dial(ctx, client.Config{Addrs: addrs, MaxRetries: -1, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	l := &scoreLoad{cl: cl, workers: workers, sent: make([]int, workers), nfailed: make([]int, workers), results: make([][]scoreResult, workers)}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			tick := time.NewTicker(pace)
			defer tick.Stop()
			key := []byte(fmt.Sprintf("player-%d", w))
			for !l.stop.Load() {
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				var r scoreResult
				err := cl.Invoke(rctx, "score.add", key, struct{}{}, &r)
				cancel()
				l.mu.Lock()
				l.sent[w]++
				if err != nil {
					l.nfailed[w]++
					l.failed = append(l.failed, fmt.Sprintf("worker %d request %d: %v", w, l.sent[w], err))
				} else {
					l.results[w] = append(l.results[w], r)
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

// waitAcked waits until n more requests succeeded.
func (l *scoreLoad) waitAcked(t *testing.T, n int64) {
	t.Helper()
	from := l.acked.Load()
	testutil.WaitFor(t, 60*time.Second, func() error {
		if got := l.acked.Load() - from; got < n {
			l.mu.Lock()
			defer l.mu.Unlock()
			last := "none"
			if k := len(l.failed); k > 0 {
				last = l.failed[k-1]
			}
			return fmt.Errorf("%d of %d more score.add calls acknowledged; %d failed so far, the last: %s", got, n, len(l.failed), last)
		}
		return nil
	})
}

// halt stops the workers and waits for them.
func (l *scoreLoad) halt() {
	l.stop.Store(true)
	l.wg.Wait()
}

// check verifies, after halt, that no request failed and that each worker's results are
// the running score of its player with every call applied exactly once by the version it
// names: version 1 then version 2, switched once (DESIGN.md invariant 3, section 10). It
// returns how many calls each version answered.
func (l *scoreLoad) check(t *testing.T) map[int]int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.failed {
		t.Errorf("failed request: %s", f)
	}
	ran := map[int]int{}
	for w, rs := range l.results {
		if len(rs)+l.nfailed[w] != l.sent[w] {
			t.Errorf("worker %d: %d results of %d requests", w, len(rs), l.sent[w])
		}
		var score int64
		version := 1
		for i, r := range rs {
			step := scorePoints(r.Version)
			switch {
			case step == 0:
				t.Fatalf("worker %d #%d: result of version %d, which no build has", w, i, r.Version)
			case r.Version < version:
				t.Fatalf("worker %d #%d: version %d ran after version %d: the switch is not at one index", w, i, r.Version, version)
			case r.Score != score+step:
				t.Fatalf("worker %d #%d: score %d after %d with version %d (+%d): a call ran twice or not at all", w, i, r.Score, score, r.Version, step)
			}
			version, score = r.Version, r.Score
			ran[r.Version]++
		}
	}
	return ran
}
