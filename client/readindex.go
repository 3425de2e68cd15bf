package client

import (
	"context"
	"fmt"
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
	req := wire.Request{Op: wire.OpInvoke, Procedure: proc, Key: key, HasKey: true, MaxLag: uint64(maxLag)}
	return c.query(ctx, proc, req, args, result, readBounded)
}

// QueryBoundedAs runs QueryBounded with typed arguments and result, as QueryAs does.
func QueryBoundedAs[R, A any](ctx context.Context, c *Client, proc string, key []byte, args A, maxLag time.Duration) (R, error) {
	var res R
	err := c.QueryBounded(ctx, proc, key, sendable(args), &res, maxLag)
	return res, err
}
