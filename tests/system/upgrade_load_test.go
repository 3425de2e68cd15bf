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

// The loads the rolling-upgrade tests run while nodes restart: steadyLoad is the worker
// loop both share; scoreLoad calls score.add, playLoad appends to stream "plays".

// steadyLoad is a bounded, steady load: workers each send one request at a time, at most
// every pace, until halted. Every acknowledged request is counted and every failure kept
// with its error, so that a test can check that none failed.
type steadyLoad struct {
	what  string // what a request is, for messages: "score.add calls"
	stop  atomic.Bool
	wg    sync.WaitGroup
	acked atomic.Int64

	mu     sync.Mutex // guards failed, and what the loads record across workers
	failed []string   // every request that failed, with its error
}

// start dials the cluster at addrs and starts workers: worker w sends its request i with
// send(ctx, cl, w, i), under a deadline of its own. It halts the load when the test ends.
func (l *steadyLoad) start(t *testing.T, ctx context.Context, addrs []string, workers int, pace time.Duration,
	send func(ctx context.Context, cl *client.Client, w, i int) error) *client.Client {
	t.Helper()
	// Unbounded retries: the client moves between nodes as they restart, and retries with
	// the same session numbers (exactly once); only a request's own deadline ends it.
	cl, err := client.Dial(ctx, client.Config{Addrs: addrs, MaxRetries: -1, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			tick := time.NewTicker(pace)
			defer tick.Stop()
			for i := 0; !l.stop.Load(); i++ {
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				err := send(rctx, cl, w, i)
				cancel()
				if err != nil {
					l.mu.Lock()
					l.failed = append(l.failed, fmt.Sprintf("worker %d request %d: %v", w, i, err))
					l.mu.Unlock()
				} else {
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
	return cl
}

// waitAcked waits until n more requests succeeded.
func (l *steadyLoad) waitAcked(t *testing.T, n int64) {
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
			return fmt.Errorf("%d of %d more %s acknowledged; %d failed so far, the last: %s", got, n, l.what, len(l.failed), last)
		}
		return nil
	})
}

// halt stops the workers and waits for them.
func (l *steadyLoad) halt() {
	l.stop.Store(true)
	l.wg.Wait()
}

// checkFailed reports, after halt, every request that failed.
func (l *steadyLoad) checkFailed(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.failed {
		t.Errorf("failed request: %s", f)
	}
}

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

// scoreLoad calls score.add: each worker on its own player, every result kept in order,
// so that the test can check that each call ran exactly once with the version it names.
type scoreLoad struct {
	steadyLoad
	cl      *client.Client
	sent    []int           // requests each worker sent; each written by its worker only
	nfailed []int           // requests of each worker that failed
	results [][]scoreResult // the results each worker got, in order
}

// startScoreLoad starts the load on the cluster at addrs; it is halted when the test ends.
func startScoreLoad(t *testing.T, ctx context.Context, addrs []string, workers int, pace time.Duration) *scoreLoad {
	t.Helper()
	l := &scoreLoad{steadyLoad: steadyLoad{what: "score.add calls"},
		sent: make([]int, workers), nfailed: make([]int, workers), results: make([][]scoreResult, workers)}
	l.cl = l.start(t, ctx, addrs, workers, pace, func(ctx context.Context, cl *client.Client, w, _ int) error {
		var r scoreResult
		err := cl.Invoke(ctx, "score.add", []byte(fmt.Sprintf("player-%d", w)), struct{}{}, &r)
		l.sent[w]++
		if err != nil {
			l.nfailed[w]++
			return err
		}
		l.results[w] = append(l.results[w], r)
		return nil
	})
	return l
}

// check verifies, after halt, that no request failed and that each worker's results are
// the running score of its player with every call applied exactly once by the version it
// names: version 1 then version 2, switched once (DESIGN.md invariant 3, section 10). It
// returns how many calls each version answered.
func (l *scoreLoad) check(t *testing.T) map[int]int {
	t.Helper()
	l.checkFailed(t)
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

// playKeys is how many keys the play load spreads its records over: enough to reach
// every partition, few enough that each key gets many records.
const playKeys = 12

// playLoad appends to stream "plays" through the client's exactly-once append (retried
// with the same session number, so it runs once), cycling over playKeys keys, counting the
// acknowledged appends per key, so that the test can compare the processor's counts with
// what the cluster acknowledged.
type playLoad struct {
	steadyLoad
	perKey map[string]int64 // acknowledged appends by key; guarded by mu
}

// startPlayLoad starts the load on the cluster at addrs; it is halted when the test ends.
func startPlayLoad(t *testing.T, ctx context.Context, addrs []string, workers int, pace time.Duration) *playLoad {
	t.Helper()
	l := &playLoad{steadyLoad: steadyLoad{what: "appends"}, perKey: map[string]int64{}}
	l.start(t, ctx, addrs, workers, pace, func(ctx context.Context, cl *client.Client, w, i int) error {
		key := fmt.Sprintf("fan-%d", (w+i*workers)%playKeys)
		if _, err := cl.Append(ctx, playsStream, []byte(key), []byte(fmt.Sprintf("w%d-%d", w, i))); err != nil {
			return fmt.Errorf("append to %s: %w", key, err)
		}
		l.mu.Lock()
		l.perKey[key]++
		l.mu.Unlock()
		return nil
	})
	return l
}

// check verifies, after halt, that no append failed, and returns the acknowledged
// appends by key.
func (l *playLoad) check(t *testing.T) map[string]int64 {
	t.Helper()
	l.checkFailed(t)
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.perKey)
}
