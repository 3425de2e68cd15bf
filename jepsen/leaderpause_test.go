package jepsen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
)

// nodeStatus is the part of a node's GET /status the pause test reads.
type nodeStatus struct {
	State  string `json:"state"`
	Leader string `json:"leader"`
	Term   uint64 `json:"term"`
}

// adminStatus fetches node i's admin /status within a second.
func (c *Cluster) adminStatus(i int) (nodeStatus, error) {
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: c.tls, DisableKeepAlives: true}}
	resp, err := hc.Get("https://" + c.Nodes[i].Admin + "/status")
	if err != nil {
		return nodeStatus{}, err
	}
	defer resp.Body.Close()
	var st nodeStatus
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// syncBuffer is a bytes.Buffer safe for concurrent writes (the client's debug log).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRepeatedLeaderPauses freezes the current leader of three real node processes with
// SIGSTOP, again and again, while clients with the default settings (no deadline of
// their own) add to counters. After each election the clients must find the new leader:
// the first write begun after the pause must be acknowledged within 2s of the others
// electing a leader, not when the frozen node resumes (issue 20 item 13: about one pause
// in four stalled the writes for the whole pause).
func TestRepeatedLeaderPauses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real node processes")
	}
	const (
		pauses = 10
		hold   = 3500 * time.Millisecond // each pause lasts at least this long
		budget = 2 * time.Second         // first write after the election, at most
	)
	c := startTestCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var logBuf syncBuffer
	cfg := client.DefaultConfig()
	cfg.Addrs, cfg.TLS = c.Addrs(), c.tls
	cfg.MaxRetries = -1 // the calls end when the writes resume, however long that takes
	cfg.Logger = slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dctx, dcancel := context.WithTimeout(ctx, 20*time.Second)
	cl, err := client.Dial(dctx, cfg)
	dcancel()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	const workers = 8
	var total atomic.Int64
	var pausedAt atomic.Int64   // UnixNano of the current pause; 0 between pauses
	var firstAfter atomic.Int64 // UnixNano of the first ack of a call begun after it
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				began := time.Now().UnixNano()
				if _, err := cl.CounterAdd(ctx, fmt.Sprintf("w%d", w), 1); err != nil {
					continue
				}
				total.Add(1)
				if p := pausedAt.Load(); p != 0 && began > p {
					firstAfter.CompareAndSwap(0, time.Now().UnixNano())
				}
			}
		}()
	}
	defer func() {
		stop.Store(true)
		cancel()
		wg.Wait()
	}()
	waitAdds := func(n int64) {
		t.Helper()
		before := total.Load()
		testutil.WaitFor(t, 30*time.Second, func() error {
			if got := total.Load() - before; got < n {
				return fmt.Errorf("%d adds acknowledged", got)
			}
			return nil
		})
	}
	waitAdds(100)

	var stalls []string
	for p := range pauses {
		// The victim is the node that leads, once every node agrees on it (the previous
		// victim has caught up and stepped down).
		victim, oldTerm := -1, uint64(0)
		testutil.WaitFor(t, 30*time.Second, func() error {
			victim = -1
			for i := range c.Nodes {
				st, err := c.adminStatus(i)
				if err != nil {
					return err
				}
				if st.State == "Leader" {
					victim, oldTerm = i, st.Term
				}
			}
			for i := range c.Nodes {
				if st, err := c.adminStatus(i); err != nil || victim < 0 || st.Leader != c.Nodes[victim].ID {
					return fmt.Errorf("the nodes do not agree on a leader yet")
				}
			}
			return nil
		})
		firstAfter.Store(0)
		logStart := len(logBuf.String())
		if err := c.Pause(victim); err != nil {
			t.Fatal(err)
		}
		paused := time.Now()
		pausedAt.Store(paused.UnixNano())

		var elected time.Time
		testutil.WaitFor(t, 30*time.Second, func() error {
			for i := range c.Nodes {
				if i == victim {
					continue
				}
				st, err := c.adminStatus(i)
				if err == nil && st.Leader != "" && st.Leader != c.Nodes[victim].ID && st.Term > oldTerm {
					elected = time.Now()
					return nil
				}
			}
			return fmt.Errorf("no new leader yet")
		})
		// Hold the pause until the writes resume or, at least, for hold.
		deadline := paused.Add(hold)
		for firstAfter.Load() == 0 && time.Now().Before(paused.Add(30*time.Second)) || time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond) // the pause's length, not a wait for a condition
		}
		if err := c.Resume(victim); err != nil {
			t.Fatal(err)
		}
		pausedAt.Store(0)
		first := time.Unix(0, firstAfter.Load())
		if firstAfter.Load() == 0 {
			first = time.Now() // none yet: the writes stalled at least this long
		}
		lag := first.Sub(elected)
		t.Logf("pause %d: %s frozen; elected after %v; first write after %v (%v after the election); resumed after %v",
			p, c.Nodes[victim].ID, elected.Sub(paused).Round(time.Millisecond), first.Sub(paused).Round(time.Millisecond),
			lag.Round(time.Millisecond), time.Since(paused).Round(time.Millisecond))
		if lag > budget {
			stalls = append(stalls, fmt.Sprintf("pause %d: writes resumed %v after the election", p, lag.Round(time.Millisecond)))
			t.Logf("client log of pause %d:\n%s", p, logBuf.String()[logStart:])
		}
		waitAdds(50)
	}
	for _, s := range stalls {
		t.Errorf("%s, want at most %v", s, budget)
	}
}
