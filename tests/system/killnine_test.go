package system

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/node"
)

// TestKillNineLeaderUnderLoad runs three real node processes, has concurrent clients add
// to counters, and kills the leader's process with SIGKILL mid-load: no hand-off, no
// shutdown code, only what was fsynced survives. Every counter must end at its
// acknowledged adds plus at most the adds whose outcome the client reported unknown
// (DESIGN.md invariants 3 and 4); the killed node, restarted on its data directory,
// replays its log and ends with the same state hashes as the others. It runs with each
// log store (--log-store).
func TestKillNineLeaderUnderLoad(t *testing.T) {
	bin := proctest.BuildBinary(t)
	for _, store := range []string{node.LogStoreBolt, node.LogStoreWAL} {
		t.Run("log-store="+store, func(t *testing.T) { testKillNineLeaderUnderLoad(t, bin, store) })
	}
}

func testKillNineLeaderUnderLoad(t *testing.T, bin, store string) {
	c := proctest.StartClusterWith(t, bin, 3, "--log-store", store)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, client.Config{Addrs: strings.Split(c.AddrFlag(), ","), MaxRetries: -1, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	const workers = 16
	var acked, unknown [workers]int64
	var total atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				actx, acancel := context.WithTimeout(ctx, 30*time.Second)
				_, err := cl.CounterAdd(actx, fmt.Sprintf("w%d", w), 1)
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
		if n := total.Load(); n < 300 {
			return fmt.Errorf("%d adds acknowledged", n)
		}
		return nil
	})
	leaderID := clusterStatus(t, bin, c.AddrFlag()).Leader
	var victim *proctest.Node
	for _, n := range c.Procs {
		if n.ID == leaderID {
			victim = n
		}
	}
	if victim == nil {
		t.Fatalf("no leader among %v", leaderID)
	}
	victim.Kill() // SIGKILL
	before := total.Load()
	testutil.WaitFor(t, 60*time.Second, func() error {
		if n := total.Load() - before; n < 300 {
			return fmt.Errorf("%d adds acknowledged since the kill", n)
		}
		return nil
	})
	stop.Store(true)
	wg.Wait()

	for w := 0; w < workers; w++ {
		got, err := cl.CounterGet(ctx, fmt.Sprintf("w%d", w))
		if err != nil {
			t.Fatalf("#%d: counter.get: %v", w, err)
		}
		if got < acked[w] || got > acked[w]+unknown[w] {
			t.Errorf("#%d: counter %d, want %d acknowledged + at most %d unknown", w, got, acked[w], unknown[w])
		}
	}

	// Restart the killed node on its data directory: it replays and catches up.
	restarted := proctest.SpawnNode(t, bin, victim.ID+"-again", "--id", victim.ID, "--data", victim.Data,
		"--raft", victim.Raft, "--client", victim.Client, "--admin", victim.Admin, "--partitions", "4", "--log-level", "warn", "--log-store", store)
	restarted.Raft, restarted.Client, restarted.Admin = victim.Raft, victim.Client, victim.Admin
	if err := restarted.WaitReady(restarted.Admin, proctest.ReadyTimeout); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, func() error {
		cs := clusterStatus(t, bin, c.AddrFlag())
		var hashes [][]string
		var applied []uint64
		for _, n := range cs.Nodes {
			hashes = append(hashes, n.Hashes)
			applied = append(applied, n.AppliedIndex)
		}
		if len(hashes) != 3 {
			return fmt.Errorf("%d nodes answered", len(hashes))
		}
		for i := range hashes {
			if applied[i] != applied[0] || !slices.Equal(hashes[i], hashes[0]) {
				return fmt.Errorf("replicas differ: applied %v", applied)
			}
		}
		return nil
	})
	t.Logf("acknowledged %d adds, %d before the kill", total.Load(), before)
}
