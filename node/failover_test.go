package node

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
)

// leaderKillLoad is what loadThroughLeaderKill counted: per worker, the operations
// acknowledged and those whose outcome the client reported unknown (an error); in all,
// the operations acknowledged and those acknowledged before the kill.
type leaderKillLoad struct {
	acked, unknown []uint64
	total, before  int64
}

// loadThroughLeaderKill runs workers clients, each calling op in a loop with its key
// "worker-<w>" (each call bounded by 20 s), kills the ready leader without a hand-off
// once least operations are acknowledged, waits for a new leader and least more
// acknowledged operations, then stops the workers and returns their counts.
func (c *testCluster) loadThroughLeaderKill(ctx context.Context, workers int, least int64,
	op func(ctx context.Context, cl *client.Client, key string) error) leaderKillLoad {
	t := c.t
	t.Helper()
	l := leaderKillLoad{acked: make([]uint64, workers), unknown: make([]uint64, workers)}
	var stop atomic.Bool
	var total atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		cl := c.dial(ctx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("worker-%d", w)
			for !stop.Load() {
				actx, acancel := context.WithTimeout(ctx, 20*time.Second)
				err := op(actx, cl, key)
				acancel()
				if err != nil {
					l.unknown[w]++
					continue
				}
				l.acked[w]++
				total.Add(1)
			}
		}()
	}
	// The workers are stopped however the test ends, before their counts are read.
	defer func() {
		stop.Store(true)
		wg.Wait()
		l.total = total.Load()
	}()
	testutil.WaitFor(t, 30*time.Second, func() error {
		if total.Load() < least {
			return fmt.Errorf("%d operations acknowledged so far", total.Load())
		}
		return nil
	})
	old := c.leader()
	for i, n := range c.Nodes {
		if n == old {
			c.kill(i)
		}
	}
	l.before = total.Load()
	if c.waitLeader() == old {
		t.Fatal("old leader still leads")
	}
	testutil.WaitFor(t, 30*time.Second, func() error {
		if total.Load() < l.before+least {
			return fmt.Errorf("only %d operations acknowledged since the kill", total.Load()-l.before)
		}
		return nil
	})
	return l
}

// TestKillLeaderUnderLoad: concurrent clients add to counters while the leader is stopped
// without any hand-off. A new leader is elected, the clients carry on, and every counter
// ends at exactly its acknowledged adds plus at most the adds whose outcome the client
// reported unknown: nothing acknowledged is lost or doubled (DESIGN.md invariants 3, 4).
func TestKillLeaderUnderLoad(t *testing.T) {
	bothSnapshotModes(t, func(t *testing.T, snapshots bool) {
		c := startCluster(t, clusterOptions{nodes: 3, snapshots: snapshots})
		const workers = 16
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		l := c.loadThroughLeaderKill(ctx, workers, 200, func(ctx context.Context, cl *client.Client, key string) error {
			_, err := cl.CounterAdd(ctx, key, 1)
			return err
		})
		c.waitConverged()
		check := c.dial(ctx)
		for w := 0; w < workers; w++ {
			n, err := check.CounterGet(ctx, fmt.Sprintf("worker-%d", w))
			if err != nil {
				t.Fatalf("#%d: counter.get: %v", w, err)
			}
			if got := uint64(n); got < l.acked[w] || got > l.acked[w]+l.unknown[w] {
				t.Errorf("#%d: counter %d, want %d acknowledged + at most %d unknown", w, got, l.acked[w], l.unknown[w])
			}
		}
		t.Logf("acknowledged %d adds, %d before the kill", l.total, l.before)
	})
}
