package benchmarks

import (
	"context"
	"crypto/tls"
	"math/rand/v2"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/loadgen"
	"github.com/lockstepdb/lockstep/client"
)

// The benchmarks drive their clusters through package loadgen, Lockstep's load engine;
// this file adapts it to the shape they share: a closed loop over a few clients.

// Op is one request of a workload; worker is the caller's index, rng its own source.
type Op = loadgen.ClientOp

// Load describes a closed-loop run: Inflight workers, each with one request outstanding,
// spread over Clients client connections, for Duration.
type Load struct {
	Clients  int
	Inflight int
	// Duration is how long the load runs; 0: until Run's context ends (the requests in
	// flight then are cut short and not counted).
	Duration time.Duration
	Op       Op
	// TLS is the clients' TLS configuration (client.Config.TLS); nil with Insecure for
	// nodes started with --insecure.
	TLS      *tls.Config
	Insecure bool
}

// Report is what a run measured.
type Report = loadgen.Result

// Run drives the load against the cluster at addrs and returns what it measured.
func Run(ctx context.Context, addrs []string, l Load) (Report, error) {
	clients, err := loadgen.Dial(ctx, client.Config{Addrs: addrs, MaxRetries: -1, MaxInflight: 4096, TLS: l.TLS, Insecure: l.Insecure}, l.Clients)
	if err != nil {
		return Report{}, err
	}
	defer loadgen.Close(clients)
	w := loadgen.Workload{Op: l.Op}
	cfg := loadgen.Config{Workers: l.Inflight, Duration: l.Duration, Op: w.On(clients), ErrorType: loadgen.ErrorType}
	if l.Duration == 0 {
		return loadgen.Run(ctx, cfg) // until ctx ends
	}
	// The requests run to completion even past ctx's end, as a closed loop's last ones do.
	return loadgen.Run(context.WithoutCancel(ctx), cfg)
}

// CounterAdd adds 1 to one of 1024 counters.
func CounterAdd(ctx context.Context, c *client.Client, _ int, rng *rand.Rand) error {
	_, err := c.CounterAdd(ctx, loadgen.Key("c", rng.IntN(1024)), 1)
	return err
}

// Vote casts one vote from a random phone of a million for one of six contestants, as
// VoltDB's Voter benchmark does; run VoterInit first.
var Vote = loadgen.Vote

// VoterInit sets up the Voter contest the Vote workload votes in.
var VoterInit = loadgen.VoterInit
