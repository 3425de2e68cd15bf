package jepsen

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// TestFastClockLeaderReplaced: after a leader whose clock runs a minute fast (the clock
// fault, Cluster.SetClock) is killed, batch time keeps advancing under the new leader —
// appends get later and later batch times, and an idle session expires within a few TTLs
// — instead of standing still at the fast leader's last batch time for the minute
// (issue 20 item 8; docs/architecture.md, "Batch time after a fast-clock leader"). The
// new leader reports it: lockstep_batch_time_slowed_batches_total and its log.
func TestFastClockLeaderReplaced(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real node processes")
	}
	const (
		skew   = time.Minute
		ttl    = time.Second
		stream = "skew"
	)
	ctx := context.Background()
	c, err := StartCluster(ctx, ClusterConfig{Bin: testBin, Nodes: 3, Dir: t.TempDir(), Partitions: 1,
		Args: []string{"--session-ttl", ttl.String()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	cl, err := c.dialClient(ctx, nil, func(cfg *client.Config) { cfg.MaxRetries = -1 })
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: stream}); err != nil {
		t.Fatal(err)
	}
	// appendTime appends a record and returns its batch time (its event time, none given).
	appendTime := func() (time.Time, error) {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		off, err := cl.Append(actx, stream, []byte("k"), []byte("v"))
		if err != nil {
			return time.Time{}, err
		}
		for actx.Err() == nil { // a replica that has not applied it yet returns nothing
			recs, _, err := cl.ReadStream(actx, stream, 0, off, 1)
			if err == nil && len(recs) == 1 {
				return recs[0].EventTime, nil
			}
			select { // poll the replicas' applied state, within actx
			case <-actx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
		return time.Time{}, fmt.Errorf("record %d never read back: %w", off, actx.Err())
	}

	fast := waitLeader(t, c, cl)
	if err := c.SetClock(fast, skew); err != nil {
		t.Fatal(err)
	}
	var last time.Time
	testutil.WaitFor(t, 30*time.Second, func() error { // the node re-reads its clock file every 50ms
		var err error
		if last, err = appendTime(); err != nil {
			return err
		}
		if ahead := time.Until(last); ahead < skew/2 {
			return fmt.Errorf("batch time %v ahead, want the skew of %v", ahead, skew)
		}
		return nil
	})
	c.Kill(fast)
	leader := -1
	testutil.WaitFor(t, 30*time.Second, func() error { // the others name the dead leader until they time out
		if leader = c.Leader(ctx, cl); leader < 0 || leader == fast {
			return fmt.Errorf("no new leader")
		}
		return nil
	})
	t.Logf("fast-clock leader %s killed at batch time %v ahead; %s leads", c.Nodes[fast].ID, time.Until(last), c.Nodes[leader].ID)

	idle, err := c.Client(ctx) // opens a session, then stays silent
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	idleSession := idle.SessionID()

	// Batch time keeps advancing: every append runs later than the one before it, and the
	// idle session (and every other but cl's) expires, though batch time is still about
	// a minute ahead of the new leader's clock.
	var times []time.Time
	testutil.WaitFor(t, 40*time.Second, func() error {
		bt, err := appendTime()
		if err != nil {
			return err
		}
		times = append(times, bt)
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		st, err := cl.Status(sctx, c.Nodes[leader].Client)
		if err != nil {
			return err
		}
		if st.Sessions > 1 {
			return fmt.Errorf("%d sessions live at batch time %v (%v ahead): the idle ones have not expired", st.Sessions, bt, time.Until(bt))
		}
		return nil
	})
	for i := 1; i < len(times); i++ {
		if !times[i].After(times[i-1]) {
			t.Errorf("append %d ran at batch time %v, not after %v: batch time stood still", i, times[i], times[i-1])
		}
	}
	if ahead := time.Until(times[len(times)-1]); ahead < skew/4 {
		t.Errorf("batch time only %v ahead of the clocks after the fast leader; it must not jump back", ahead)
	}
	// The idle client finds its session expired and opens a new one.
	if _, err := idle.Append(ctx, stream, []byte("k"), []byte("idle")); err != nil {
		t.Fatal(err)
	}
	if s := idle.SessionID(); s == idleSession {
		t.Errorf("idle session %d still live", s)
	}

	if n := scrape(t, c, leader, "lockstep_batch_time_slowed_batches_total"); n < 1 {
		t.Errorf("new leader: lockstep_batch_time_slowed_batches_total %v, want > 0", n)
	}
	log, err := os.ReadFile(c.Nodes[leader].LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(log, []byte("batch time is ahead of this leader's clock")) {
		t.Errorf("new leader's log does not say batch time runs ahead of its clock")
	}
}

// scrape returns the value of metric (unlabelled) on node i's /metrics.
func scrape(t *testing.T, c *Cluster, i int, metric string) float64 {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: c.tls, DisableKeepAlives: true}}
	resp, err := hc.Get("https://" + c.Nodes[i].Admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), metric+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", metric, err)
			}
			return f
		}
	}
	t.Fatalf("%s not in node %s's metrics (%v)", metric, c.Nodes[i].ID, sc.Err())
	return 0
}
