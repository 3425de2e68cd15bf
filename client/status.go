package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// Status asks the node at addr for its status; an empty addr asks the node the client
// currently sends leader requests to. It makes one attempt (redialing once if the pooled
// connection turns out to be dead), bounded by ctx and RequestTimeout: a status probe
// should report an unreachable node, not hide it behind retries.
func (c *Client) Status(ctx context.Context, addr string) (Status, error) {
	if addr == "" {
		addr = c.leaderAddr()
	}
	if err := c.acquireFree(ctx); err != nil {
		return Status{}, c.opErr(fmt.Errorf("client: status of %s: %w", addr, err))
	}
	defer c.releaseFree()
	resp, err := c.at(ctx, addr, &wire.Request{Op: wire.OpStatus})
	if err != nil {
		return Status{}, c.opErr(fmt.Errorf("client: status of %s: %w", addr, err))
	}
	var st wire.Status
	if err := c.decode(resp.Value, &st); err != nil {
		return Status{}, fmt.Errorf("client: status of %s: %w: %w", addr, ErrMalformed, err)
	}
	return statusFromWire(&st), nil
}

// at sends req to addr once and returns the OK Response or an error. If the pooled
// connection was found dead before the request went out, it dials again and resends once.
func (c *Client) at(ctx context.Context, addr string, req *wire.Request) (wire.Response, error) {
	for try := 0; ; try++ {
		r := *req
		resp, sent, err := c.attempt(ctx, addr, &r, nil)
		if err != nil && !sent && try == 0 && errors.Is(err, ErrConnLost) {
			continue
		}
		if err == nil {
			err = resp.Err()
		}
		return resp, err
	}
}

// Leader returns the address the client currently sends leader requests to: its best
// knowledge of the leader's client address.
func (c *Client) Leader() string { return c.leaderAddr() }

// SessionID returns the id of the client's session, 0 while it has none (before the
// first open, or between an expiry and the next request).
func (c *Client) SessionID() uint64 { return c.sess.current() }
