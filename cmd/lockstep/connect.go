package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/urfave/cli/v2"
	"github.com/vmihailenco/msgpack/v5"
)

// The admin commands talk to nodes one request per connection, with no client session:
// status and membership requests are not invocations, and a cluster without a leader
// must still answer `cluster status`.

// leaderRetryPause is the pause between rounds of asking the nodes for the leader.
const leaderRetryPause = 100 * time.Millisecond

// unreachableError reports a node that could not be reached: the request was not sent.
type unreachableError struct {
	addr string
	err  error
}

func (e *unreachableError) Error() string { return fmt.Sprintf("cannot reach %s: %v", e.addr, e.err) }
func (e *unreachableError) Unwrap() error { return e.err }

// call sends req to the node at addr on a new connection and returns its response. A
// non-OK response is returned as its *wire.Error; a node that cannot be reached as an
// *unreachableError.
func call(ctx context.Context, addr, clusterID string, req *wire.Request) (wire.Response, error) {
	var resp wire.Response
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return resp, &unreachableError{addr, err}
	}
	if _, err := wire.ClientHandshake(ctx, nc, clusterID); err != nil {
		nc.Close()
		if errors.Is(err, wire.ErrClusterMismatch) || errors.Is(err, wire.ErrProtocolVersion) {
			return resp, fmt.Errorf("%s: %w", addr, err)
		}
		return resp, &unreachableError{addr, err}
	}
	c, err := wire.NewConn(nc, wire.ConnConfig{})
	if err != nil {
		nc.Close()
		return resp, &unreachableError{addr, err}
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		nc.SetReadDeadline(dl)
	}
	req.ID = 1
	if err := c.SendRequest(ctx, req); err != nil {
		return resp, fmt.Errorf("%s: %w", addr, err)
	}
	if err := c.RecvResponse(&resp); err != nil {
		return resp, fmt.Errorf("%s: %w", addr, err)
	}
	return resp, resp.Err()
}

// nodeStatus asks the node at addr for its status.
func nodeStatus(ctx context.Context, addr, clusterID string) (wire.Status, error) {
	var st wire.Status
	resp, err := call(ctx, addr, clusterID, &wire.Request{Op: wire.OpStatus})
	if err != nil {
		return st, err
	}
	if err := msgpack.Unmarshal(resp.Value, &st); err != nil {
		return st, fmt.Errorf("status from %s: %w: %w", addr, wire.ErrMalformed, err)
	}
	return st, nil
}

// callLeader sends req to the cluster's leader: it asks the nodes at addrs in turn,
// follows NotLeader hints, and goes round again while no node can take the request
// (election in progress, node starting), until ctx ends. Only errors that prove the
// request was not executed are retried; any other answer is returned.
func callLeader(ctx context.Context, addrs []string, clusterID string, req *wire.Request) (wire.Response, error) {
	var last error
	for {
		for _, addr := range addrs {
			for hop := 0; hop < 3; hop++ {
				r := *req
				resp, err := call(ctx, addr, clusterID, &r)
				if err == nil {
					return resp, nil
				}
				last = err
				var we *wire.Error
				if errors.As(err, &we) && we.Code == wire.CodeNotLeader && we.Leader != "" && we.Leader != addr {
					addr = we.Leader
					continue
				}
				if !notExecuted(err) {
					return resp, err
				}
				break
			}
		}
		select {
		case <-ctx.Done():
			return wire.Response{}, deadlineError(ctx, last)
		case <-time.After(leaderRetryPause):
		}
	}
}

// notExecuted reports whether err proves the request did not run, so it may be sent again.
func notExecuted(err error) bool {
	var ue *unreachableError
	return errors.As(err, &ue) || errors.Is(err, wire.ErrNotLeader) || errors.Is(err, wire.ErrNotReady) ||
		errors.Is(err, wire.ErrShuttingDown)
}

// deadlineError explains that ctx ended, naming the last error seen.
func deadlineError(ctx context.Context, last error) error {
	if last == nil {
		return ctx.Err()
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("gave up at the --timeout: %w", last)
	}
	return fmt.Errorf("%w: %w", ctx.Err(), last)
}

// maxDialTimeout caps the time one connection attempt of the Go client may take, so it
// tries the other addresses within --timeout.
const maxDialTimeout = 2 * time.Second

// commandContext returns the context of one admin command: c's, ended after --timeout.
func commandContext(c *cli.Context) (context.Context, context.CancelFunc, error) {
	timeout := c.Duration("timeout")
	if timeout <= 0 {
		return nil, nil, fmt.Errorf("--timeout %v: want a positive duration", timeout)
	}
	ctx, cancel := context.WithTimeout(c.Context, timeout)
	return ctx, cancel, nil
}

// dialClient connects the Go client to the cluster at --addr, within ctx.
func dialClient(ctx context.Context, c *cli.Context) (*client.Client, error) {
	addrs := c.StringSlice("addr")
	timeout := c.Duration("timeout")
	cl, err := client.Dial(ctx, client.Config{
		Addrs:          addrs,
		ClusterID:      c.String("cluster-id"),
		DialTimeout:    min(timeout, maxDialTimeout),
		RequestTimeout: timeout,
		MaxRetries:     -1, // the context bounds the retries
	})
	if err != nil {
		return nil, fmt.Errorf("cannot reach the cluster at %s within %v: %w", strings.Join(addrs, ","), timeout, err)
	}
	return cl, nil
}
