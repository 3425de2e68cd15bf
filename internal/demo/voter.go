package demo

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/loadgen"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// voterTally counts what the voters were told.
type voterTally struct {
	sent, acked, accepted, unknown atomic.Int64
}

// op is benchmarks/loadgen's voter request (loadgen.CastVote), counted in t.
func (t *voterTally) op(cl *client.Client) loadgen.Op {
	return func(ctx context.Context, _ int, rng *rand.Rand) error {
		t.sent.Add(1)
		res, err := loadgen.CastVote(ctx, cl, rng)
		if err != nil {
			t.unknown.Add(1) // the client retries without limit: it gave up only at the end
			return err
		}
		t.acked.Add(1)
		if res == builtin.VoteAccepted {
			t.accepted.Add(1)
		}
		return nil
	}
}

// RunVoter runs VoltDB's Voter workload (benchmarks/loadgen's voter workload) on an
// embedded cluster from cfg.Clients closed-loop clients for cfg.Duration, kills the
// leader halfway (cfg.Kill), and checks that every acknowledged vote was counted exactly
// once and that every replica holds the same state. It writes a live line a second and a
// summary to out, and returns an error wrapping ErrCheckFailed if the check failed.
func RunVoter(ctx context.Context, cfg Config, out io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	out = &lockedWriter{w: out} // the live line and the kill both print
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, err := startCluster(ctx, cfg, out)
	if err != nil {
		return err
	}
	defer c.close()
	if err := loadgen.VoterInit(ctx, c.cl); err != nil {
		return fmt.Errorf("voter.init: %w", err)
	}
	fmt.Fprintf(out, "leader is n%d; %d voters voting for %s (VoltDB's Voter: %d phones, %d votes each at most)\n",
		c.Leader()+1, cfg.Clients, cfg.Duration, loadgen.VoterPhones, loadgen.VoterMaxVotesPerPhone)

	var tally voterTally
	killCtx, stopKiller := context.WithTimeout(ctx, cfg.Duration)
	defer stopKiller()
	restart := c.killLeaderHalfway(killCtx, cfg, out)
	res, err := loadgen.Run(ctx, loadgen.Config{
		Workers:  cfg.Clients,
		Duration: cfg.Duration,
		Op:       tally.op(c.cl),
		Progress: func(s loadgen.Second) {
			fmt.Fprintf(out, "\r%8d votes/s   p99 %-8s acknowledged %-9d", s.Ops, s.Latency.P99, tally.acked.Load())
		},
	})
	stopKiller()
	if err != nil {
		fmt.Fprintln(out)
		return err
	}
	// The last, partial second: the line now agrees with the summary.
	fmt.Fprintf(out, "\rdone after %-8s        acknowledged %-9d\n", res.Elapsed.Round(time.Millisecond), tally.acked.Load())
	if err := restart(); err != nil {
		return err
	}
	return voterReport(ctx, out, c, &tally, res)
}

// voterReport checks exactly-once and prints the summary table; it returns an error
// wrapping ErrCheckFailed if any vote was lost or doubled or the replicas differ.
func voterReport(ctx context.Context, out io.Writer, c *demoCluster, t *voterTally, res loadgen.Result) error {
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	results, err := c.cl.VoterResults(cctx)
	if err != nil {
		return fmt.Errorf("voter.results: %w", err)
	}
	var counted int64
	for _, r := range results {
		counted += r.Votes
	}
	hashes, convErr := c.WaitConverged(cctx)
	accepted, unknown := t.accepted.Load(), t.unknown.Load()
	lost := max(0, accepted-counted)
	dup := max(0, counted-accepted-unknown)
	s := res.Latency
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "votes sent\t%d\n", t.sent.Load())
	fmt.Fprintf(tw, "acknowledged\t%d (%d accepted, %d over the per-phone limit)\n", t.acked.Load(), accepted, t.acked.Load()-accepted)
	fmt.Fprintf(tw, "outcome unknown to the client\t%d\n", unknown)
	fmt.Fprintf(tw, "counted by the cluster\t%d\n", counted)
	fmt.Fprintf(tw, "duplicates\t%d\n", dup)
	fmt.Fprintf(tw, "lost\t%d\n", lost)
	fmt.Fprintf(tw, "throughput\t%.0f votes/s\n", res.Throughput())
	fmt.Fprintf(tw, "latency\tp50 %s  p99 %s  p99.9 %s  max %s\n", s.P50, s.P99, s.P999, s.Max)
	for i, n := range c.Nodes {
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
		return fmt.Errorf("%w: %v", ErrCheckFailed, problems)
	}
	fmt.Fprintln(out, "exactly-once check passed: every acknowledged vote counted once, all replicas equal")
	return nil
}
