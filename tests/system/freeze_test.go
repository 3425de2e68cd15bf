package system

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/sequencer"
)

// adminStatus is the part of a node's GET /status the freeze test reads.
type adminStatus struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	Leader string `json:"leader"`
	Term   uint64 `json:"term"`
}

// statusOver fetches the node's admin /status within timeout.
func statusOver(n *proctest.Node, timeout time.Duration) (adminStatus, error) {
	hc := &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: proctest.TLS()}}
	resp, err := hc.Get("https://" + n.Admin + "/status")
	if err != nil {
		return adminStatus{}, err
	}
	defer resp.Body.Close()
	var st adminStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return adminStatus{}, err
	}
	return st, nil
}

// TestFrozenLeaderUnderLoad runs three real node processes, has concurrent clients add to
// counters (default client settings, a 2s deadline per call), and freezes the leader's
// process with SIGSTOP: its connections stay open but nothing answers. Writes must
// resume within the election timeout plus a second of the others electing a new leader
// (the client must not stay pinned to the frozen node), and nothing acknowledged may be
// lost: every counter ends at its acknowledged adds plus at most the failed ones.
func TestFrozenLeaderUnderLoad(t *testing.T) {
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, client.Config{Addrs: strings.Split(c.AddrFlag(), ","), TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	const workers = 8
	var acked, failed [workers]int64
	var total atomic.Int64
	var pausedAt atomic.Int64   // UnixNano of the SIGSTOP; 0 before
	var firstAfter atomic.Int64 // UnixNano of the first success of a call begun after it
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				began := time.Now().UnixNano()
				actx, acancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := cl.CounterAdd(actx, fmt.Sprintf("w%d", w), 1)
				acancel()
				if err != nil {
					failed[w]++
					continue
				}
				acked[w]++
				total.Add(1)
				if p := pausedAt.Load(); p != 0 && began > p {
					firstAfter.CompareAndSwap(0, time.Now().UnixNano())
				}
			}
		}()
	}
	testutil.WaitFor(t, 30*time.Second, func() error {
		if n := total.Load(); n < 200 {
			return fmt.Errorf("%d adds acknowledged", n)
		}
		return nil
	})

	var victim *proctest.Node
	var oldTerm uint64
	testutil.WaitFor(t, 10*time.Second, func() error {
		for _, n := range c.Procs {
			st, err := statusOver(n, time.Second)
			if err == nil && st.State == "Leader" {
				victim, oldTerm = n, st.Term
				return nil
			}
		}
		return fmt.Errorf("no node says it leads")
	})
	var others []*proctest.Node
	for _, n := range c.Procs {
		if n != victim {
			others = append(others, n)
		}
	}

	if err := victim.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	pausedAt.Store(paused.UnixNano())
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := victim.Cmd.Process.Signal(syscall.SIGCONT); err != nil && victim.Running() {
				t.Errorf("SIGCONT: %v", err)
			}
		}
	}
	defer resume()

	// The others elect a new leader: the first time one of them names a leader other than
	// the frozen node, in a newer term.
	var elected time.Time
	var newLeader string
	testutil.WaitFor(t, 30*time.Second, func() error {
		for _, n := range others {
			st, err := statusOver(n, time.Second)
			if err == nil && st.Leader != "" && st.Leader != victim.ID && st.Term > oldTerm {
				elected, newLeader = time.Now(), st.Leader
				return nil
			}
		}
		return fmt.Errorf("no new leader yet")
	})
	testutil.WaitFor(t, 30*time.Second, func() error {
		if firstAfter.Load() == 0 {
			return fmt.Errorf("no write has succeeded since the leader froze")
		}
		return nil
	})
	first := time.Unix(0, firstAfter.Load())
	budget := sequencer.DefaultElectionTimeout + time.Second
	t.Logf("leader %s frozen; %s elected after %v; first write after %v, %v after the election (budget %v)",
		victim.ID, newLeader, elected.Sub(paused), first.Sub(paused), first.Sub(elected), budget)
	if lag := first.Sub(elected); lag > budget {
		t.Errorf("writes resumed %v after the new leader was elected, want at most %v", lag, budget)
	}

	// Thaw the old leader and go on a little: it must step down without harm.
	resume()
	before := total.Load()
	testutil.WaitFor(t, 30*time.Second, func() error {
		if n := total.Load() - before; n < 100 {
			return fmt.Errorf("%d adds acknowledged since the thaw", n)
		}
		return nil
	})
	stop.Store(true)
	wg.Wait()

	for w := range workers {
		got, err := cl.CounterGet(ctx, fmt.Sprintf("w%d", w))
		if err != nil {
			t.Fatalf("#%d: counter.get: %v", w, err)
		}
		if got < acked[w] || got > acked[w]+failed[w] {
			t.Errorf("#%d: counter %d, want %d acknowledged + at most %d failed", w, got, acked[w], failed[w])
		}
	}
	var nf int64
	for _, f := range failed {
		nf += f
	}
	t.Logf("acknowledged %d adds, %d failed", total.Load(), nf)
}
