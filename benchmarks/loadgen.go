package benchmarks

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/latency"
)

// Op is one request of a workload; worker is the caller's index, rng its own source.
type Op func(ctx context.Context, c *client.Client, worker int, rng *rand.Rand) error

// Load describes a closed-loop run: Inflight workers, each with one request outstanding,
// spread over Clients client connections, for Duration.
type Load struct {
	Clients  int
	Inflight int
	// Duration is how long the load runs; 0: until Run's context ends.
	Duration time.Duration
	Op       Op
	// TLS is the clients' TLS configuration (client.Config.TLS); nil with Insecure for
	// nodes started with --insecure.
	TLS      *tls.Config
	Insecure bool
}

// Report is what a run measured.
type Report struct {
	Ops, Errors int64
	Elapsed     time.Duration
	Latency     latency.Summary
}

// Throughput returns successful operations per second.
func (r Report) Throughput() float64 { return float64(r.Ops) / r.Elapsed.Seconds() }

func (r Report) String() string {
	return fmt.Sprintf("%.0f ops/s  p50 %s  p99 %s  p99.9 %s  max %s  (%d ops, %d errors)",
		r.Throughput(), r.Latency.P50, r.Latency.P99, r.Latency.P999, r.Latency.Max, r.Ops, r.Errors)
}

// Run drives the load against the cluster at addrs and returns what it measured.
func Run(ctx context.Context, addrs []string, l Load) (Report, error) {
	clients := make([]*client.Client, l.Clients)
	for i := range clients {
		c, err := client.Dial(ctx, client.Config{Addrs: addrs, MaxRetries: -1, MaxInflight: 4096, TLS: l.TLS, Insecure: l.Insecure})
		if err != nil {
			return Report{}, err
		}
		defer c.Close()
		clients[i] = c
	}
	rec := latency.New()
	var ops, errs atomic.Int64
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if l.Duration > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeout(runCtx, l.Duration)
		defer stop()
	}
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < l.Inflight; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w%len(clients)]
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for runCtx.Err() == nil {
				t := time.Now()
				if err := l.Op(context.WithoutCancel(runCtx), c, w, rng); err != nil {
					errs.Add(1)
					continue
				}
				rec.Record(time.Since(t))
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	return Report{Ops: ops.Load(), Errors: errs.Load(), Elapsed: time.Since(start), Latency: rec.Summary()}, nil
}

// CounterAdd adds 1 to one of 1024 counters.
func CounterAdd(ctx context.Context, c *client.Client, _ int, rng *rand.Rand) error {
	var name [8]byte
	n := rng.IntN(1024)
	name = [8]byte{'c', byte('0' + n/1000), byte('0' + n/100%10), byte('0' + n/10%10), byte('0' + n%10)}
	_, err := c.CounterAdd(ctx, string(name[:5]), 1)
	return err
}

// Vote casts one vote from a random phone of a million for one of six contestants, as
// VoltDB's Voter benchmark does; run VoterInit first.
func Vote(ctx context.Context, c *client.Client, _ int, rng *rand.Rand) error {
	_, err := c.Vote(ctx, 2000000000+rng.Int64N(1000000), int32(1+rng.IntN(6)))
	return err
}

// VoterInit sets up the Voter contest the Vote workload votes in.
func VoterInit(ctx context.Context, c *client.Client) error {
	_, err := c.VoterInit(ctx, []string{"Edwina Burnam", "Tabatha Gehling", "Kelly Clauss", "Jessie Alloway", "Alana Bregman", "Jessie Eichman"}, 10)
	return err
}
