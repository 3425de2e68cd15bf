package client

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// readBounded is the wire's ConsistencyBounded; callers reach it through QueryBounded,
// which always sends a bound with it.
const readBounded = Consistency(wire.ConsistencyBounded)

// QueryBounded runs the read-only single-partition procedure proc, like Query, at bounded
// staleness: any node may answer, follower or leader, if it can prove that its state
// reflects every write acknowledged more than maxLag before it answers (docs/protocol.md,
// "Bounded-staleness reads": the node measures the age of its last leader-confirmed read
// index with its own monotonic clock). A node that cannot answers NotReady and the query
// is retried on another. maxLag must be positive, else the error wraps ErrBadArguments and
// nothing is sent. A bound shorter than a round trip to the leader may never be met.
func (c *Client) QueryBounded(ctx context.Context, proc string, key []byte, args, result any, maxLag time.Duration) error {
	if maxLag <= 0 {
		return fmt.Errorf("client: %s: %w: staleness bound %v, want a positive duration", proc, ErrBadArguments, maxLag)
	}
	if len(key) == 0 {
		return fmt.Errorf("client: %s: %w: empty partition key", proc, ErrBadArguments)
	}
	req := wire.Request{Op: wire.OpInvoke, Procedure: proc, Key: key, HasKey: true, MaxLag: uint64(min(maxLag, time.Duration(math.MaxInt64)))}
	return c.query(ctx, proc, req, args, result, readBounded)
}

// QueryBoundedAs runs QueryBounded with typed arguments and result, as QueryAs does.
func QueryBoundedAs[R, A any](ctx context.Context, c *Client, proc string, key []byte, args A, maxLag time.Duration) (R, error) {
	var res R
	err := c.QueryBounded(ctx, proc, key, sendable(args), &res, maxLag)
	return res, err
}

// ConfirmLeader is a call of nodes, for the ReadIndex protocol: it asks the node at addr
// whether it still follows the leader leaderID in Raft term term. It returns nil for yes,
// an error wrapping ErrNotLeader for no, or the error that kept the node from answering.
// One attempt, bounded by ctx and Config.RequestTimeout: a leader counts answers, it does
// not wait for retries.
func (c *Client) ConfirmLeader(ctx context.Context, addr string, term uint64, leaderID string) error {
	if err := c.acquireFree(ctx); err != nil {
		return c.opErr(fmt.Errorf("client: confirm leader at %s: %w", addr, err))
	}
	defer c.releaseFree()
	if _, err := c.at(ctx, addr, &wire.Request{Op: wire.OpConfirmLeader, Term: term, LeaderID: leaderID}); err != nil {
		return c.opErr(fmt.Errorf("client: confirm leader at %s: %w", addr, err))
	}
	return nil
}

// ReadIndex is a call of nodes: it asks the leader at addr for a read index, a log index
// such that a replica that has applied it holds every write acknowledged before the call.
// One attempt, bounded by ctx and Config.RequestTimeout.
func (c *Client) ReadIndex(ctx context.Context, addr string) (uint64, error) {
	if err := c.acquireFree(ctx); err != nil {
		return 0, c.opErr(fmt.Errorf("client: read index at %s: %w", addr, err))
	}
	defer c.releaseFree()
	resp, err := c.at(ctx, addr, &wire.Request{Op: wire.OpReadIndex})
	if err != nil {
		return 0, c.opErr(fmt.Errorf("client: read index at %s: %w", addr, err))
	}
	return resp.Index, nil
}
