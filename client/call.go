package client

import (
	"context"

	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// Typed calls: generic forms of Invoke, InvokeMulti, Query and QueryMulti that take the
// arguments as a value of type A and return the result as a value of type R, for any
// procedure. R comes first so that it can be named alone and A inferred:
//
//	n, err := client.InvokeAs[int64](ctx, c, "counter.add", []byte("hits"), builtin.CounterAddArgs{Delta: 1})
//
// Arguments of type builtin.NoArgs are sent as no argument bytes at all, which every
// procedure taking NoArgs accepts. Each has its method's retries, errors and
// exactly-once rules.

// InvokeAs runs the single-partition procedure proc with partition key key and
// arguments args, exactly once, as Client.Invoke does, and returns its result.
func InvokeAs[R, A any](ctx context.Context, c *Client, proc string, key []byte, args A) (R, error) {
	var res R
	err := c.Invoke(ctx, proc, key, sendable(args), &res)
	return res, err
}

// InvokeMultiAs runs the multi-partition procedure proc on the partitions of keys, or on
// every partition if keys is empty, as Client.InvokeMulti does, and returns its result.
func InvokeMultiAs[R, A any](ctx context.Context, c *Client, proc string, keys [][]byte, args A) (R, error) {
	var res R
	err := c.InvokeMulti(ctx, proc, keys, sendable(args), &res)
	return res, err
}

// QueryAs runs the read-only single-partition procedure proc at consistency cons, as
// Client.Query does, and returns its result.
func QueryAs[R, A any](ctx context.Context, c *Client, proc string, key []byte, args A, cons Consistency) (R, error) {
	var res R
	err := c.Query(ctx, proc, key, sendable(args), &res, cons)
	return res, err
}

// QueryMultiAs runs the read-only multi-partition procedure proc at consistency cons on
// the partitions of keys, or on every partition if keys is empty, as Client.QueryMulti
// does, and returns its result.
func QueryMultiAs[R, A any](ctx context.Context, c *Client, proc string, keys [][]byte, args A, cons Consistency) (R, error) {
	var res R
	err := c.QueryMulti(ctx, proc, keys, sendable(args), &res, cons)
	return res, err
}

// sendable returns args as the untyped methods take them: nil (no argument bytes) for
// builtin.NoArgs.
func sendable[A any](args A) any {
	a := any(args)
	if _, none := a.(builtin.NoArgs); none {
		return nil
	}
	return a
}
