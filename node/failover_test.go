package node

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
)

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
		var acked, unknown [workers]int64
		var stop atomic.Bool
		var total atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			cl := c.dial(ctx)
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("worker-%d", w)
				for !stop.Load() {
					actx, acancel := context.WithTimeout(ctx, 20*time.Second)
					_, err := cl.CounterAdd(actx, name, 1)
					acancel()
					if err != nil {
						unknown[w]++
						continue
					}
					acked[w]++
					total.Add(1)
				}
			}()
		}
		testutil.WaitFor(t, 30*time.Second, func() error {
			if total.Load() < 200 {
				return fmt.Errorf("%d adds acknowledged so far", total.Load())
			}
			return nil
		})
		old := c.leader()
		for i, n := range c.Nodes {
			if n == old {
				c.kill(i)
			}
		}
		before := total.Load()
		newLeader := c.waitLeader()
		if newLeader == old {
			t.Fatal("old leader still leads")
		}
		testutil.WaitFor(t, 30*time.Second, func() error {
			if total.Load() < before+200 {
				return fmt.Errorf("only %d adds acknowledged since the kill", total.Load()-before)
			}
			return nil
		})
		stop.Store(true)
		wg.Wait()
		c.waitConverged()
		check := c.dial(ctx)
		for w := 0; w < workers; w++ {
			got, err := check.CounterGet(ctx, fmt.Sprintf("worker-%d", w))
			if err != nil {
				t.Fatalf("#%d: counter.get: %v", w, err)
			}
			if got < acked[w] || got > acked[w]+unknown[w] {
				t.Errorf("#%d: counter %d, want %d acknowledged + at most %d unknown", w, got, acked[w], unknown[w])
			}
		}
		t.Logf("acknowledged %d adds, %d before the kill", total.Load(), before)
	})
}
