package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/latency"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/urfave/cli/v2"
)

// contestants of the demo's Voter contest, as in VoltDB's example.
var contestants = []string{"Edwina Burnam", "Tabatha Gehling", "Kelly Clauss", "Jessie Alloway", "Alana Bregman", "Jessie Eichman"}

// demoTally counts what the voters were told.
type demoTally struct {
	sent, acked, accepted, unknown atomic.Int64
}

func runDemo(c *cli.Context) error {
	out := c.App.Writer
	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	duration := c.Duration("duration")
	cluster, cl, _, err := startDemoCluster(ctx, c, out)
	if err != nil {
		return err
	}
	defer cluster.Close()
	defer cl.Close()
	if _, err := cl.VoterInit(ctx, contestants, 3); err != nil {
		return fmt.Errorf("voter.init: %w", err)
	}
	fmt.Fprintf(out, "leader is n%d; %d voters voting for %s\n", cluster.Leader()+1, c.Int("clients"), duration)

	var tally demoTally
	lat := latency.New()
	window := latency.New()
	runCtx, stopVoters := context.WithTimeout(ctx, duration)
	defer stopVoters()
	var wg sync.WaitGroup
	for v := 0; v < c.Int("clients"); v++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vote(runCtx, cl, uint64(v), &tally, lat, window)
		}()
	}
	restart := killLeaderHalfway(runCtx, c, out, cluster, duration, &wg)
	progress(runCtx, out, &tally, window)
	wg.Wait()
	fmt.Fprintln(out)
	if err := restart(); err != nil {
		return err
	}
	return demoReport(ctx, out, cluster, cl, &tally, lat, duration)
}

// vote runs one closed-loop voter: one request outstanding at a time.
func vote(ctx context.Context, cl *client.Client, seed uint64, t *demoTally, lat, window *latency.Recorder) {
	rng := rand.New(rand.NewPCG(seed, 0x766f746572))
	for ctx.Err() == nil {
		phone := 2000000000 + rng.Int64N(50000) // 10 digits; phones repeat and hit the limit
		who := int32(1 + rng.IntN(len(contestants)))
		start := time.Now()
		t.sent.Add(1)
		res, err := cl.Vote(context.WithoutCancel(ctx), phone, who)
		d := time.Since(start)
		if err != nil {
			t.unknown.Add(1)
			continue
		}
		lat.Record(d)
		window.Record(d)
		t.acked.Add(1)
		if res == builtin.VoteAccepted {
			t.accepted.Add(1)
		}
	}
}

// killLeaderHalfway, with --kill and more than one node, kills the leader halfway through
// duration in a goroutine of wg. The restart it returns, called after wg.Wait, restarts
// the node killed, if any.
func killLeaderHalfway(ctx context.Context, c *cli.Context, out io.Writer, cluster *node.LocalCluster, duration time.Duration, wg *sync.WaitGroup) (restart func() error) {
	killed := -1
	if c.Bool("kill") && c.Int("nodes") > 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			killed = killHalfway(ctx, out, cluster, duration)
		}()
	}
	return func() error {
		if killed < 0 {
			return nil
		}
		if err := cluster.Restart(killed); err != nil {
			return fmt.Errorf("restart n%d: %w", killed+1, err)
		}
		fmt.Fprintf(out, "restarted n%d: it replays its log and catches up\n", killed+1)
		return nil
	}
}

func killHalfway(ctx context.Context, out io.Writer, cluster *node.LocalCluster, d time.Duration) int {
	select {
	case <-ctx.Done():
		return -1
	case <-time.After(d / 2):
	}
	// Between elections no node leads for a moment: wait for one rather than skip the kill.
	leader, err := cluster.WaitLeader(ctx)
	if err != nil {
		return -1
	}
	start := time.Now()
	cluster.Kill(leader)
	fmt.Fprintf(out, "\nkilled the leader n%d (no hand-off)\n", leader+1)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if next, err := cluster.WaitLeader(wctx); err == nil {
		fmt.Fprintf(out, "n%d took over after %s\n", next+1, time.Since(start).Round(time.Millisecond))
	}
	return leader
}

// progress prints a live line every second until ctx ends.
func progress(ctx context.Context, out io.Writer, t *demoTally, window *latency.Recorder) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, lastAt := int64(0), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			acked := t.acked.Load()
			s := window.Take()
			fmt.Fprintf(out, "\r%8.0f votes/s   p99 %-8s acknowledged %-9d", float64(acked-last)/now.Sub(lastAt).Seconds(), s.P99, acked)
			last, lastAt = acked, now
		}
	}
}

// demoReport checks exactly-once and prints the summary table; it returns an error (and so
// a non-zero exit) if any vote was lost or doubled or the replicas differ.
func demoReport(ctx context.Context, out io.Writer, cluster *node.LocalCluster, cl *client.Client, t *demoTally, lat *latency.Recorder, d time.Duration) error {
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	results, err := cl.VoterResults(cctx)
	if err != nil {
		return fmt.Errorf("voter.results: %w", err)
	}
	var counted int64
	for _, r := range results {
		counted += r.Votes
	}
	hashes, convErr := cluster.WaitConverged(cctx)
	accepted, unknown := t.accepted.Load(), t.unknown.Load()
	lost := max(0, accepted-counted)
	dup := max(0, counted-accepted-unknown)
	s := lat.Summary()
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "votes sent\t%d\n", t.sent.Load())
	fmt.Fprintf(tw, "acknowledged\t%d (%d accepted, the rest over the per-phone limit)\n", t.acked.Load(), accepted)
	fmt.Fprintf(tw, "outcome unknown to the client\t%d\n", unknown)
	fmt.Fprintf(tw, "counted by the cluster\t%d\n", counted)
	fmt.Fprintf(tw, "duplicates\t%d\n", dup)
	fmt.Fprintf(tw, "lost\t%d\n", lost)
	fmt.Fprintf(tw, "throughput\t%.0f votes/s\n", float64(t.acked.Load())/d.Seconds())
	fmt.Fprintf(tw, "latency\tp50 %s  p99 %s  p99.9 %s  max %s\n", s.P50, s.P99, s.P999, s.Max)
	for i, n := range cluster.Nodes {
		if n != nil {
			fmt.Fprintf(tw, "n%d state hashes\t%x\n", i+1, n.FSM().Engine().Hashes())
		}
	}
	tw.Flush()
	var problems []string
	if lost > 0 || dup > 0 {
		problems = append(problems, fmt.Sprintf("%d votes lost, %d doubled", lost, dup))
	}
	if convErr != nil {
		problems = append(problems, "replicas differ: "+convErr.Error())
	}
	if len(hashes) == 0 {
		problems = append(problems, "no state hashes")
	}
	if len(problems) > 0 {
		return fmt.Errorf("demo: exactly-once check FAILED: %v", problems)
	}
	fmt.Fprintln(out, "exactly-once check passed: every acknowledged vote counted once, all replicas equal")
	return nil
}
