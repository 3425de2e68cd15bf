package benchmarks

import (
	"context"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
)

// BenchmarkRebuildDivergentProcs measures the automatic rebuild of a divergent replica
// (issue 13 item 5) on 3 real node processes built with the lockstep_nondet tag: the
// cluster takes LOCKSTEP_BENCH_SECONDS (default 10) of counter adds, with compaction
// snapshots on (--snapshot-threshold 8192, the default), then, under a moderate client
// load, test.nondet makes one follower diverge. Reported: seconds from the injection to
// the follower's detection of its divergence, from detection to its being a voter again
// (demoted, state discarded, snapshot installed, log tail replayed, hashes verified,
// promoted), and the load's p99 alone and during the rebuild. Runs once: -benchtime 1x.
func BenchmarkRebuildDivergentProcs(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once: use -benchtime 1x")
	}
	c := startProcsBin(b, lockstepBinaryTags(b, "lockstep_nondet"), 3, "--partitions", "4")
	ctx := context.Background()
	r, err := Run(ctx, c.clientAddrs(), Load{Clients: 4, Inflight: 512, Duration: benchDuration(), Op: CounterAdd, TLS: testutil.ClientTLS(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("history: %s", r)
	cl := c.dial(b)
	var bad *proc
	var lst client.Status // the leader's
	for _, n := range c.nodes {
		st, err := cl.Status(ctx, n.client)
		if err != nil {
			b.Fatal(err)
		}
		switch {
		case st.State == client.RoleLeader:
			lst = st
		case bad == nil:
			bad = n
		}
	}
	probe := Load{Clients: 1, Inflight: 64, Duration: 5 * time.Second, Op: CounterAdd, TLS: testutil.ClientTLS(b)}
	base, err := Run(ctx, c.clientAddrs(), probe)
	if err != nil {
		b.Fatal(err)
	}
	probe.Duration = 15 * time.Second
	during := make(chan Report, 1)
	go func() {
		r, err := Run(ctx, c.clientAddrs(), probe)
		if err != nil {
			b.Error(err)
		}
		during <- r
	}()
	time.Sleep(time.Second) // the load is running
	bc, err := client.Open(client.Config{Addrs: []string{bad.client}, TLS: testutil.ClientTLS(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer bc.Close()
	start := time.Now()
	var ok bool
	if err := cl.Invoke(ctx, "test.nondet", []byte("bench"), map[string]string{"node": bad.id}, &ok); err != nil {
		b.Fatal(err)
	}
	var detected, voter time.Duration
	var from uint64
	for voter == 0 {
		if time.Since(start) > 5*time.Minute {
			b.Fatalf("%s not rebuilt after %v:\n%s", bad.id, time.Since(start), bad.Log())
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := bc.Status(sctx, bad.client)
		cancel()
		switch {
		case err != nil: // closed for its restart
		case detected == 0 && st.Divergent != "":
			detected = time.Since(start)
		case st.Rebuilds == 1 && st.Rebuild == "" && st.Suffrage == "voter" && st.Ready:
			voter, from = time.Since(start), st.RebuildFrom
		}
		time.Sleep(20 * time.Millisecond)
	}
	dr := <-during
	b.Logf("client load alone: %s", base)
	b.Logf("client load during the rebuild: %s", dr)
	b.Logf("%d inputs of history (%d log entries); %s diverged, detected after %v, a voter again %v after detection, "+
		"from a snapshot at index %d", lst.Inputs, lst.AppliedIndex, bad.id, detected.Round(time.Millisecond),
		(voter - detected).Round(time.Millisecond), from)
	b.ReportMetric(float64(lst.Inputs), "inputs-history")
	b.ReportMetric(detected.Seconds(), "s-to-detect")
	b.ReportMetric((voter - detected).Seconds(), "s-detect-to-voter")
	b.ReportMetric(float64(base.Latency.P99.Microseconds())/1000, "p99-ms-alone")
	b.ReportMetric(float64(dr.Latency.P99.Microseconds())/1000, "p99-ms-rebuild")
	b.ReportMetric(float64(dr.Errors), "client-errors")
}
