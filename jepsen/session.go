package jepsen

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/lockstepdb/lockstep/client"
)

// nodeArgser is a workload that needs flags on the nodes.
type nodeArgser interface {
	// NodeArgs are extra flags of every node process.
	NodeArgs() []string
}

// clientTuner is a workload that adjusts its workers' client configuration.
type clientTuner interface {
	// TuneClient adjusts cfg before a worker's client is dialed.
	TuneClient(cfg *client.Config)
}

// SessionExpiry is the session-expiry workload: counter.add of 1 on one counter per
// worker, on nodes whose sessions expire after TTL of idleness. Under the expire-sessions
// fault a worker's request commits, its answer is lost, and the worker is cut off past
// the TTL while it retries: when it reaches the cluster again its session has expired,
// and the outcome must be the original result or client.ErrUnknownOutcome — never a
// second execution (DESIGN.md §5, "a request to an expired session fails loudly instead
// of running twice"). Checks: each counter's final value is within [acknowledged,
// acknowledged + unknown], the acknowledged results are distinct, and (reported) how
// many operations ended with ErrUnknownOutcome after an expiry.
type SessionExpiry struct {
	// TTL is the nodes' --session-ttl. Default 1s (the least the nodes accept).
	TTL time.Duration

	inDoubt atomic.Int64 // operations that ended with ErrUnknownOutcome
}

// Name implements Workload.
func (s *SessionExpiry) Name() string { return "session-expiry" }

// NodeArgs implements nodeArgser: the short session TTL.
func (s *SessionExpiry) NodeArgs() []string {
	ttl := s.TTL
	if ttl == 0 {
		ttl = time.Second
	}
	return []string{"--session-ttl", ttl.String()}
}

// TuneClient implements clientTuner: retries bounded only by the operation's deadline
// (opTimeout), so a retry outlives the cut and meets the expired session rather than
// giving up before the heal.
func (s *SessionExpiry) TuneClient(cfg *client.Config) { cfg.MaxRetries = -1 }

// Setup implements Workload: counters start at 0.
func (s *SessionExpiry) Setup(context.Context, *client.Client) error { return nil }

// expiryCounter is worker p's counter.
func expiryCounter(p int) string { return fmt.Sprintf("s%d", p) }

// Invoke implements Workload.
func (s *SessionExpiry) Invoke(ctx context.Context, w *Worker) {
	name := expiryCounter(w.Process)
	w.Do(Op{F: "add", Key: name, Args: []int64{1}}, func() ([]int64, error) {
		v, err := w.Client.CounterAdd(ctx, name, 1)
		if errors.Is(err, client.ErrUnknownOutcome) {
			s.inDoubt.Add(1)
		}
		return []int64{v}, err
	})
}

// Check implements Workload.
func (s *SessionExpiry) Check(ctx context.Context, cl *client.Client, hist []Op, _ string) []Verdict {
	seen := map[int]bool{}
	var names []string
	for _, op := range hist {
		if op.Process >= 0 && !seen[op.Process] {
			seen[op.Process] = true
			names = append(names, expiryCounter(op.Process))
		}
	}
	slices.Sort(names)
	vs := checkCounters(ctx, cl, hist, names)
	return append(vs, Verdict{Checker: "session-expired-in-doubt", Valid: true,
		Detail: fmt.Sprintf("%d operations ended with ErrUnknownOutcome (a session expired after an attempt in doubt)", s.inDoubt.Load())})
}
