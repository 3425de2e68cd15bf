package benchmarks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/loadgen"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
)

// BenchmarkFailoverProcs measures leader failover (issue 14: "kill -9 → first acknowledged
// write ≤ 1.5 s"): 3 `lockstep node` processes (fsync on, mutual TLS) under a closed-loop
// counter.add load from LOCKSTEP_FAILOVER_CLIENTS clients (default 4) of the client
// library, in this process, each a client.Dial with the default Config and 16 requests in
// flight. Each of LOCKSTEP_FAILOVER_ROUNDS rounds (default 10) waits for a healthy cluster
// (every node ready, every client writing), kills the leader with SIGKILL, and measures
// from the kill:
//
//   - detect: the first survivor's "heartbeat timeout reached" (its log, JSON, info level);
//   - elected: the first survivor's "election won" (its log);
//   - leader-ready: a survivor's status says it leads in a newer term and is ready
//     (status polled every 10 ms, so this includes up to 10 ms of polling);
//   - first-ack: the first write a client saw acknowledged after the kill;
//   - all-clients: every client has had a write acknowledged after the kill.
//
// A write acknowledged within failoverStaleAck of the kill is the dead leader's (its
// answer was on the way): no survivor may start an election before its HeartbeatTimeout
// (500 ms), so such an answer cannot be the new leader's. The killed node is then
// started again on its data dir and the next round waits for it. Reported: min, median,
// p90 and max of each measure over the rounds, and the client errors. Runs once:
// -benchtime 1x.
func BenchmarkFailoverProcs(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once: use -benchtime 1x")
	}
	rounds := envInt("LOCKSTEP_FAILOVER_ROUNDS", 10)
	nClients := envInt("LOCKSTEP_FAILOVER_CLIENTS", 4)
	bin := lockstepBinary(b)
	c := startProcs(b, 3, "--partitions", "4", "--log-format", "json", "--log-level", "info")
	ctx, stop := context.WithCancel(context.Background())
	load := startFailoverLoad(b, ctx, c.clientAddrs(), nClients, 16)
	defer func() {
		stop()
		load.wait()
	}()
	watch, err := client.Open(client.Config{Addrs: c.clientAddrs(), TLS: testutil.ClientTLS(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer watch.Close()

	var res []failoverRound
	logDir := b.TempDir()
	for r := range rounds {
		if err := waitHealthy(ctx, c, watch, load, 60*time.Second); err != nil {
			b.Fatalf("round %d: %v", r+1, err)
		}
		time.Sleep(time.Second) // a second of steady load before the kill
		fr, victim, err := killLeader(ctx, c, watch, load)
		if err != nil {
			b.Fatalf("round %d: %v", r+1, err)
		}
		res = append(res, fr)
		b.Logf("round %d: %s", r+1, fr)
		for _, n := range c.nodes {
			if n != victim {
				for _, e := range electionEvents(n.LogPath, fr.kill, fr.kill.Add(fr.allClients)) {
					b.Logf("    %s +%dms %s", n.id, e.Time.Sub(fr.kill).Milliseconds(), e.Msg)
				}
			}
		}
		// Start the killed node again on its data dir, with a log of its own.
		p, err := startProc(filepath.Join(logDir, fmt.Sprintf("%s-%d.log", victim.id, r+1)), bin, victim.args...)
		if err != nil {
			b.Fatal(err)
		}
		victim.Process = p // stopped by startProcs's cleanup, which stops the node's current process
	}
	stop()
	load.wait()
	b.Logf("client errors over the run: %v", load.errorCounts())
	b.Logf("writes acknowledged: %d", load.ok.Load())
	for _, m := range []struct {
		name string
		get  func(failoverRound) time.Duration
	}{
		{"detect", func(f failoverRound) time.Duration { return f.detect }},
		{"elected", func(f failoverRound) time.Duration { return f.elected }},
		{"leader-ready", func(f failoverRound) time.Duration { return f.ready }},
		{"first-ack", func(f failoverRound) time.Duration { return f.firstAck }},
		{"all-clients", func(f failoverRound) time.Duration { return f.allClients }},
	} {
		var d []time.Duration
		for _, f := range res {
			d = append(d, m.get(f))
		}
		s := summarize(d)
		b.Logf("%-12s min %v  median %v  p90 %v  max %v", m.name, s[0], s[1], s[2], s[3])
		for i, q := range []string{"min", "median", "p90", "max"} {
			b.ReportMetric(s[i].Seconds(), "s-"+m.name+"-"+q)
		}
	}
	var errs int64
	for _, n := range load.errorCounts() {
		errs += n
	}
	b.ReportMetric(float64(errs), "client-errors")
}

// failoverStaleAck is how long after the kill an acknowledgement is taken for the dead
// leader's own: below the survivors' HeartbeatTimeout, so no new leader can have sent it.
const failoverStaleAck = 100 * time.Millisecond

// failoverRound is what one kill measured, each from the kill.
type failoverRound struct {
	victim                                       string
	kill                                         time.Time
	detect, elected, ready, firstAck, allClients time.Duration
	staleAcks                                    int64 // acknowledgements within failoverStaleAck
}

func (f failoverRound) String() string {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" }
	return fmt.Sprintf("killed %s: detect %s, elected %s, leader ready %s, first ack %s, all clients %s (%d late acks of the dead leader)",
		f.victim, ms(f.detect), ms(f.elected), ms(f.ready), ms(f.firstAck), ms(f.allClients), f.staleAcks)
}

// killLeader kills the leader of c with SIGKILL and measures the failover.
func killLeader(ctx context.Context, c *procCluster, watch *client.Client, load *failoverLoad) (failoverRound, *proc, error) {
	var leader *proc
	var term uint64
	for _, n := range c.nodes {
		st, err := watch.Status(ctx, n.client)
		if err == nil && st.State == client.RoleLeader {
			leader, term = n, st.Term
		}
	}
	if leader == nil {
		return failoverRound{}, nil, errors.New("no leader")
	}
	kill := time.Now()
	fr := failoverRound{victim: leader.id, kill: kill}
	load.mark(kill.Add(failoverStaleAck))
	leader.Kill()
	// Survivors' status every 10 ms until one leads, ready, in a newer term.
	deadline := kill.Add(30 * time.Second)
	for fr.ready == 0 {
		if time.Now().After(deadline) {
			return fr, leader, errors.New("no new leader within 30 s")
		}
		for _, n := range c.nodes {
			if n == leader {
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			st, err := watch.Status(sctx, n.client)
			cancel()
			if err == nil && st.State == client.RoleLeader && st.Term > term && st.Ready && fr.ready == 0 {
				fr.ready = time.Since(kill)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	first, all, err := load.waitAll(deadline)
	if err != nil {
		return fr, leader, err
	}
	fr.firstAck, fr.allClients = first.Sub(kill), all.Sub(kill)
	fr.staleAcks = load.stale.Load()
	for _, n := range c.nodes {
		if n == leader {
			continue
		}
		if t, ok := logTime(n.LogPath, "heartbeat timeout reached", kill); ok && (fr.detect == 0 || t.Sub(kill) < fr.detect) {
			fr.detect = t.Sub(kill)
		}
		if t, ok := logTime(n.LogPath, "election won", kill); ok && (fr.elected == 0 || t.Sub(kill) < fr.elected) {
			fr.elected = t.Sub(kill)
		}
	}
	return fr, leader, nil
}

// waitHealthy waits until every node of c is ready and every client of load has had a
// write acknowledged in the last second.
func waitHealthy(ctx context.Context, c *procCluster, watch *client.Client, load *failoverLoad, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var why error
		for _, n := range c.nodes {
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			st, err := watch.Status(sctx, n.client)
			cancel()
			switch {
			case err != nil:
				why = fmt.Errorf("node %s: %w", n.id, err)
			case !st.Ready:
				why = fmt.Errorf("node %s not ready: %s", n.id, st.NotReadyReason)
			}
		}
		if why == nil {
			why = load.writing(time.Second)
		}
		if why == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster not healthy after %v: %w", timeout, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logTime returns the time of the first line of the JSON log at path after since whose
// message contains msg.
func logTime(path, msg string, since time.Time) (time.Time, bool) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if !bytes.Contains(sc.Bytes(), []byte(msg)) {
			continue
		}
		var line logLine
		if json.Unmarshal(sc.Bytes(), &line) == nil && strings.Contains(line.Msg, msg) && line.Time.After(since) {
			return line.Time, true
		}
	}
	return time.Time{}, false
}

// logLine is one line of a node's JSON log.
type logLine struct {
	Time time.Time `json:"time"`
	Msg  string    `json:"msg"`
}

// electionEvents returns the lines of the JSON log at path between from and to that tell
// of Raft's elections (heartbeat timeouts, pre-votes, votes, state changes).
func electionEvents(path string, from, to time.Time) []logLine {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []logLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Time.Before(from) || l.Time.After(to) {
			continue
		}
		for _, k := range []string{"heartbeat timeout", "vote", "election", "entering", "leader"} {
			if strings.Contains(l.Msg, k) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// failoverLoad is a closed-loop counter.add load of several clients, each a client.Dial
// with the default Config, that records when each client's writes were acknowledged.
type failoverLoad struct {
	clients []*failoverClient
	ok      atomic.Int64 // writes acknowledged
	stale   atomic.Int64 // of them, acknowledged between a kill and its mark
	wg      sync.WaitGroup

	mu     sync.Mutex
	errs   map[string]int64
	since  time.Time // the current mark: acknowledgements after it count as the new leader's
	killAt time.Time // the kill behind the mark
}

// failoverClient is one client of the load.
type failoverClient struct {
	cl       *client.Client
	lastOK   atomic.Int64 // when a write was last acknowledged, UnixNano
	firstNew atomic.Int64 // the first acknowledgement after the mark, UnixNano; 0: none yet
}

// startFailoverLoad dials clients clients to addrs and starts inflight workers on each.
func startFailoverLoad(tb testing.TB, ctx context.Context, addrs []string, clients, inflight int) *failoverLoad {
	tb.Helper()
	l := &failoverLoad{errs: map[string]int64{}}
	for range clients {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		cl, err := client.Dial(dctx, client.Config{Addrs: addrs, TLS: testutil.ClientTLS(tb)})
		cancel()
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { cl.Close() })
		fc := &failoverClient{cl: cl}
		l.clients = append(l.clients, fc)
		for w := range inflight {
			l.wg.Add(1)
			go l.work(ctx, fc, w)
		}
	}
	return l
}

// work adds 1 to one of 1024 counters, again and again, until ctx ends.
func (l *failoverLoad) work(ctx context.Context, fc *failoverClient, w int) {
	defer l.wg.Done()
	for i := w; ctx.Err() == nil; i += 7 {
		_, err := fc.cl.CounterAdd(ctx, loadgen.Key("c", i%1024), 1)
		now := time.Now()
		if err != nil {
			if ctx.Err() == nil {
				l.mu.Lock()
				l.errs[loadgen.ErrorType(err)]++
				l.mu.Unlock()
			}
			continue
		}
		l.ok.Add(1)
		fc.lastOK.Store(now.UnixNano())
		l.mu.Lock()
		since, killAt := l.since, l.killAt
		l.mu.Unlock()
		switch {
		case now.After(since):
			fc.firstNew.CompareAndSwap(0, now.UnixNano())
		case now.After(killAt):
			l.stale.Add(1)
		}
	}
}

// mark starts a new measure: acknowledgements after since count as the new leader's, and
// those between now and since as the old one's.
func (l *failoverLoad) mark(since time.Time) {
	l.mu.Lock()
	l.since, l.killAt = since, since.Add(-failoverStaleAck)
	l.mu.Unlock()
	l.stale.Store(0)
	for _, fc := range l.clients {
		fc.firstNew.Store(0)
	}
}

// waitAll waits, until deadline, for every client's first acknowledgement after the mark,
// and returns the first of them and the last.
func (l *failoverLoad) waitAll(deadline time.Time) (first, last time.Time, err error) {
	for {
		var ts []int64
		for _, fc := range l.clients {
			if t := fc.firstNew.Load(); t != 0 {
				ts = append(ts, t)
			}
		}
		if len(ts) == len(l.clients) {
			return time.Unix(0, slices.Min(ts)), time.Unix(0, slices.Max(ts)), nil
		}
		if time.Now().After(deadline) {
			return first, last, fmt.Errorf("%d of %d clients writing again at the deadline", len(ts), len(l.clients))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// writing returns nil if every client has had a write acknowledged within d.
func (l *failoverLoad) writing(d time.Duration) error {
	for i, fc := range l.clients {
		if age := time.Since(time.Unix(0, fc.lastOK.Load())); age > d {
			return fmt.Errorf("client %d: no write acknowledged for %v", i, age.Round(time.Millisecond))
		}
	}
	return nil
}

// errorCounts returns the load's errors by type.
func (l *failoverLoad) errorCounts() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int64{}
	for k, v := range l.errs {
		out[k] = v
	}
	return out
}

// wait waits for the workers, once their context has ended.
func (l *failoverLoad) wait() { l.wg.Wait() }

// summarize returns the min, median, p90 and max of d (zeros if d is empty).
func summarize(d []time.Duration) [4]time.Duration {
	if len(d) == 0 {
		return [4]time.Duration{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return [4]time.Duration{s[0], s[len(s)/2], at(0.9), s[len(s)-1]}
}

// envInt returns the positive integer in the environment variable name, else def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
