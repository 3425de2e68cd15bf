package system

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/certs"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/internal/wire"
)

// The denial-of-service attacks of issue 20 (item 14), each tried as an outsider would
// against real node processes of a secure cluster: silent connections that never start a
// TLS handshake (client port, then the followers' Raft ports with the leader killed), a
// certificate of a name that is not a user flooding refused requests, and half-sent
// frames whose memory must come back once their connections close.

// floodConns is how many silent connections an attacker holds per port: more than the
// 64 handshake slots (--max-handshakes), fewer than --max-conns-per-addr.
const floodConns = 80

// silentFlood holds n TCP connections to addr that never send a byte, opening another
// each time the node closes one, until the returned stop is called (also at cleanup).
// open reports how many are open now.
func silentFlood(t *testing.T, addr string, n int) (open func() int64, stop func()) {
	var (
		wg    sync.WaitGroup
		count atomic.Int64
		done  = make(chan struct{})
		once  sync.Once
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					select {
					case <-done:
						return
					case <-time.After(10 * time.Millisecond): // the attacker's pace, not a wait for a condition
					}
					continue
				}
				count.Add(1)
				closed := make(chan struct{})
				go func() {
					select {
					case <-done:
						nc.Close()
					case <-closed:
					}
				}()
				start := time.Now()
				io.Copy(io.Discard, nc) // until the node closes it (or stop does)
				close(closed)
				nc.Close()
				count.Add(-1)
				if time.Since(start) < 10*time.Millisecond { // refused at once: do not spin
					select {
					case <-done:
						return
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
		}()
	}
	stop = func() { once.Do(func() { close(done); wg.Wait() }) }
	t.Cleanup(stop)
	return count.Load, stop
}

// waitFlood waits until the flood holds at least want connections.
func waitFlood(t *testing.T, open func() int64, want int64) {
	t.Helper()
	testutil.WaitFor(t, 20*time.Second, func() error {
		if n := open(); n < want {
			return fmt.Errorf("the flood holds %d connections, want %d", n, want)
		}
		return nil
	})
}

// TestSilentConnectionsDoNotStarveClients (issue 20 item 14a): while an outsider holds
// more silent TCP connections to the client port than there are handshake places (80),
// or than the node takes from one address (300, past --max-conns-per-addr), opening
// another as soon as one is closed, fresh clients from the same address connect and
// call, promptly, again and again. Before the fix the silent connections held every
// place for the whole handshake timeout (10s) and each fresh connection was closed at
// once.
func TestSilentConnectionsDoNotStarveClients(t *testing.T) {
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 1)
	nd := c.Procs[0]
	for _, flood := range []int{floodConns, 300} {
		t.Run(strconv.Itoa(flood), func(t *testing.T) {
			open, stop := silentFlood(t, nd.Client, flood)
			defer stop()
			waitFlood(t, open, 64)
			var fails []string
			var slowest time.Duration
			for i := range 10 {
				start := time.Now()
				nc, err := dialProtocol(nd.Client)
				took := time.Since(start)
				slowest = max(slowest, took)
				if err != nil {
					fails = append(fails, err.Error())
					continue
				}
				nc.Close()
				if i%3 == 0 { // and a whole client: dial, session, call
					cl := limitsClient(t, c.AddrFlag())
					adds(t, cl, 50*time.Millisecond)
					cl.Close()
				}
			}
			t.Logf("10 fresh connections under a flood of %d silent ones (%d open): %d refused, slowest %v", flood, open(), len(fails), slowest)
			if len(fails) > 0 {
				t.Fatalf("%d of 10 fresh connections refused under the flood (first: %s)", len(fails), fails[0])
			}
			if slowest > 5*time.Second {
				t.Errorf("a fresh connection took %v under the flood", slowest)
			}
		})
	}
}

// TestRaftFloodReelection (issue 20 item 14b): while an outsider holds silent connections
// to both followers' Raft ports, the leader is killed; the followers elect a new leader
// within a few election timeouts, flood or not. Before the fix they could not reach each
// other (every handshake slot held) and stayed leaderless until the flood stopped.
func TestRaftFloodReelection(t *testing.T) {
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 3)
	leader := proctest.LeaderNode(t, bin, c)
	var survivors []*proctest.Node
	for _, n := range c.Procs {
		if n != leader {
			survivors = append(survivors, n)
			open, _ := silentFlood(t, n.Raft, floodConns)
			waitFlood(t, open, 64)
		}
	}
	leader.Kill()
	start := time.Now()
	const bound = 5 * time.Second
	var elected string
	for time.Since(start) < 30*time.Second && elected == "" {
		for _, n := range survivors {
			if st, err := statusOver(n, time.Second); err == nil && st.State == "Leader" {
				elected = n.ID
			}
		}
		time.Sleep(proctest.PollPause)
	}
	took := time.Since(start)
	t.Logf("leader %s killed under a Raft-port flood of %d silent connections per follower: %q elected after %v", leader.ID, floodConns, elected, took)
	if elected == "" || took > bound {
		t.Fatalf("new leader %q after %v under the flood, want one within %v", elected, took, bound)
	}
}

// TestRefusedRequestsLogRateLimited (issue 20 item 14c): a client certificate of a name
// that is not a user floods the leader with requests, every one refused. Each refusal is
// answered and counted, but the log gets a few lines a second with a count of those left
// out, not one line per request. Before the fix the node wrote one WARN line per refusal:
// tens of thousands in two seconds.
func TestRefusedRequestsLogRateLimited(t *testing.T) {
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 1)
	nd := c.Procs[0]
	dir := copyCA(t, testutil.CertsDir(t))
	if err := certs.CreateClient(dir, "mallory", certs.Options{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := client.LoadTLS(dir, "mallory")
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.Clone()
	cfg.ServerName = "127.0.0.1"
	tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", nd.Client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := wire.ClientHandshake(ctx, tc, "lockstep"); err != nil {
		t.Fatal(err)
	}
	var denied atomic.Int64
	go func() { // read the answers, so the node keeps answering
		fr := wire.NewFrameReader(bufio.NewReader(tc), 0)
		for {
			b, err := fr.ReadFrame()
			if err != nil {
				return
			}
			var resp wire.Response
			if wire.DecodeResponse(b, &resp) == nil && resp.Code == wire.CodePermissionDenied {
				denied.Add(1)
			}
		}
	}()
	const flood = 2 * time.Second
	w := bufio.NewWriterSize(tc, 64<<10)
	var frame []byte
	sent := 0
	start := time.Now()
	for end := time.Now().Add(flood); time.Now().Before(end); {
		// Keep within the answers the node queues for a connection (a client that lets
		// more pile up is cut off): the attacker's pace, not a wait for a condition.
		for sent-int(denied.Load()) > 1024 && time.Now().Before(end) {
			time.Sleep(100 * time.Microsecond)
		}
		for range 256 {
			sent++
			body := wire.AppendRequest(nil, &wire.Request{ID: uint64(sent), Op: wire.OpOpenSession})
			frame = wire.AppendFrame(frame[:0], body)
			w.Write(frame)
		}
		tc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if err := w.Flush(); err != nil {
			t.Fatalf("flood: %v", err)
		}
	}
	testutil.WaitFor(t, 30*time.Second, func() error {
		if n := denied.Load(); n < int64(sent) {
			return fmt.Errorf("%d of %d refusals answered", n, sent)
		}
		return nil
	})
	took := time.Since(start) // from the first refusal to the last
	// Every refusal is counted, logged or not.
	line := nodeMetric(t, nd, `lockstep_authz_total{decision="denied",op="OpenSession"}`)
	f := strings.Fields(line)
	if len(f) != 2 {
		t.Fatalf("no refusal counter: %q", line)
	}
	if v, _ := strconv.ParseFloat(f[1], 64); int(v) < sent {
		t.Errorf("refusal counter %v, want %d", v, sent)
	}
	// The last interval's line comes when the next refusal arrives or its interval ends.
	testutil.WaitFor(t, 10*time.Second, func() error {
		if !bytes.Contains(nd.Log(), []byte("suppressed")) {
			return fmt.Errorf("no line with a suppressed count in the log")
		}
		return nil
	})
	log := nd.Log()
	lines := bytes.Count(log, []byte(`msg="permission denied"`))
	t.Logf("%d refused requests in %v: %d log lines (%d bytes of log)", sent, took, lines, len(log))
	// ratelog's defaults: 5 lines a second, and one more with the count at the end.
	if bound := 5 * (int(took/time.Second) + 2); lines > bound {
		t.Errorf("%d permission-denied lines for %d refusals in %v, want at most %d", lines, sent, took, bound)
	}
}

// TestHalfFramesMemoryReturned (issue 20 item 14, memory): 200 connections each announce
// a maximum frame (4 MiB) and send half of it, then close. Within seconds the node's
// RSS comes back to near where it was. Nothing else touches the node meanwhile
// (a scrape of its metrics allocates, and could trigger the collection the node must do
// itself). Before the fix it stayed at the attack's peak (about 150 MiB more) for
// minutes: nothing allocated enough for Go's collector to run.
func TestHalfFramesMemoryReturned(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 400 MiB through TLS")
	}
	const conns = 200
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 1)
	nd := c.Procs[0]
	cl := limitsClient(t, c.AddrFlag())
	adds(t, cl, 200*time.Millisecond)
	// The race detector's shadow memory is never given back: a race build is measured by
	// its Go heap instead (a scrape of which may collect, so it is the weaker check).
	mem, what := func() int64 { return rssBytes(t, nd.Cmd.Process.Pid) }, "RSS"
	if proctest.RaceBuild {
		mem, what = func() int64 {
			f := strings.Fields(nodeMetric(t, nd, "go_memstats_heap_inuse_bytes "))
			if len(f) != 2 {
				t.Fatal("no go_memstats_heap_inuse_bytes")
			}
			v, _ := strconv.ParseFloat(f[1], 64)
			return int64(v)
		}, "Go heap"
	}
	base := mem()

	held := sendHalfFrames(t, nd.Client, conns)
	peak := mem()
	for _, nc := range held {
		nc.Close()
	}
	closed := time.Now()
	bound := base + 40<<20
	var after int64
	// The node reclaims as the last half frame is dropped; the runtime left alone may
	// too, by chance, but seldom within seconds (it kept the peak for 30s and more in 2 of
	// 3 runs of the old code, and its luckiest took 4.9s).
	testutil.WaitFor(t, 4*time.Second, func() error {
		if after = mem(); after > bound {
			return fmt.Errorf("%s %d MiB %v after the connections closed, want at most %d MiB (%d MiB before the attack)",
				what, after>>20, time.Since(closed).Round(time.Second), bound>>20, base>>20)
		}
		return nil
	})
	t.Logf("%s %d MiB before, %d MiB with %d half frames, %d MiB %v after they closed",
		what, base>>20, peak>>20, conns, after>>20, time.Since(closed).Round(100*time.Millisecond))
	if n := adds(t, cl, 200*time.Millisecond); n == 0 {
		t.Error("no call served after the attack")
	}
}
