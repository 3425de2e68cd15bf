package client

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// wordsArgs and wordsResult stand for a user's own procedure types.
type (
	wordsArgs struct {
		Line string `msgpack:"line"`
	}
	wordsResult struct {
		Distinct int64    `msgpack:"d"`
		Top      []string `msgpack:"t"`
	}
)

// TestTypedCalls checks each generic call's request (procedure, keys, session,
// consistency and argument bytes) and the result it decodes into its type.
func TestTypedCalls(t *testing.T) {
	results := map[string][]byte{
		builtin.CounterAdd: value(t, int64(42)),
		builtin.KVGet:      value(t, builtin.KVGetResult{Value: []byte("v"), Found: true}),
		builtin.BankTotal:  value(t, builtin.BankTotalResult{Total: 10, Accounts: 2}),
		"words.count":      value(t, wordsResult{Distinct: 3, Top: []string{"the"}}),
	}
	node := startNode(t, "n", func(fc *fakeConn, req wire.Request) {
		fc.reply(wire.Response{ID: req.ID, Value: results[req.Procedure]})
	})
	c := dial(t, testConfig(t, node.addr))
	ctx := context.Background()
	tests := []struct {
		call     func() (any, error)
		want     any
		proc     string
		key      string // "" for a multi-partition request
		keys     []string
		args     []byte // the argument bytes sent; nil for none
		readAny  bool
		maxLag   uint64 // a bounded read's bound; 0 for others
		linRead  bool   // sent at wire.ConsistencyLinearizableRead
		wantSess bool
	}{
		{
			call: func() (any, error) {
				return InvokeAs[int64](ctx, c, builtin.CounterAdd, []byte("c"), builtin.CounterAddArgs{Delta: 7})
			},
			want: int64(42), proc: builtin.CounterAdd, key: "c", args: value(t, builtin.CounterAddArgs{Delta: 7}), wantSess: true,
		},
		{
			call: func() (any, error) {
				return InvokeAs[builtin.KVGetResult](ctx, c, builtin.KVGet, []byte("k"), builtin.NoArgs{})
			},
			want: builtin.KVGetResult{Value: []byte("v"), Found: true}, proc: builtin.KVGet, key: "k", wantSess: true,
		},
		{
			call: func() (any, error) {
				return InvokeMultiAs[builtin.BankTotalResult](ctx, c, builtin.BankTotal, nil, builtin.NoArgs{})
			},
			want: builtin.BankTotalResult{Total: 10, Accounts: 2}, proc: builtin.BankTotal, wantSess: true,
		},
		{
			call: func() (any, error) {
				return InvokeAs[wordsResult](ctx, c, "words.count", []byte("doc"), wordsArgs{Line: "the end"})
			},
			want: wordsResult{Distinct: 3, Top: []string{"the"}}, proc: "words.count", key: "doc",
			args: value(t, wordsArgs{Line: "the end"}), wantSess: true,
		},
		{
			call: func() (any, error) {
				return QueryAs[builtin.KVGetResult](ctx, c, builtin.KVGet, []byte("k"), builtin.NoArgs{}, ReadAny)
			},
			want: builtin.KVGetResult{Value: []byte("v"), Found: true}, proc: builtin.KVGet, key: "k", readAny: true,
		},
		{
			call: func() (any, error) {
				return QueryAs[builtin.KVGetResult](ctx, c, builtin.KVGet, []byte("k"), builtin.NoArgs{}, ReadLinearizable)
			},
			// Session-less: the leader answers it off the log (ReadIndex).
			want: builtin.KVGetResult{Value: []byte("v"), Found: true}, proc: builtin.KVGet, key: "k", linRead: true,
		},
		{
			call: func() (any, error) {
				return QueryBoundedAs[builtin.KVGetResult](ctx, c, builtin.KVGet, []byte("k"), builtin.NoArgs{}, 250*time.Millisecond)
			},
			want: builtin.KVGetResult{Value: []byte("v"), Found: true}, proc: builtin.KVGet, key: "k", maxLag: uint64(250 * time.Millisecond),
		},
		{
			call: func() (any, error) {
				return QueryMultiAs[builtin.BankTotalResult](ctx, c, builtin.BankTotal, [][]byte{[]byte("a"), []byte("b")}, builtin.NoArgs{}, ReadAny)
			},
			want: builtin.BankTotalResult{Total: 10, Accounts: 2}, proc: builtin.BankTotal, keys: []string{"a", "b"}, readAny: true,
		},
	}
	for i, tt := range tests {
		got, err := tt.call()
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("#%d: got %#v, %v, want %#v", i, got, err, tt.want)
			continue
		}
		reqs := node.requests(wire.OpInvoke)
		r := reqs[len(reqs)-1]
		var keys []string
		for _, k := range r.Keys {
			keys = append(keys, string(k))
		}
		if r.Procedure != tt.proc || r.HasKey != (tt.key != "") || string(r.Key) != tt.key || !reflect.DeepEqual(keys, tt.keys) {
			t.Errorf("#%d: request %s key %q (%t) keys %q, want %s key %q keys %q", i, r.Procedure, r.Key, r.HasKey, keys, tt.proc, tt.key, tt.keys)
		}
		// NoArgs travels as no bytes at all, not as an empty map.
		if !bytes.Equal(r.Args, tt.args) {
			t.Errorf("#%d: args %x, want %x", i, r.Args, tt.args)
		}
		if (r.Session != 0) != tt.wantSess || (r.Consistency == wire.ConsistencyAny) != tt.readAny ||
			(r.Consistency == wire.ConsistencyBounded) != (tt.maxLag != 0) || r.MaxLag != tt.maxLag ||
			(r.Consistency == wire.ConsistencyLinearizableRead) != tt.linRead {
			t.Errorf("#%d: session %d, consistency %d, bound %d, want session %t, ReadAny %t, bound %d",
				i, r.Session, r.Consistency, r.MaxLag, tt.wantSess, tt.readAny, tt.maxLag)
		}
	}
}

// TestQueryBoundedBadBound: a staleness bound that is not positive is refused with
// ErrBadArguments, and nothing is sent; so is an unknown consistency level.
func TestQueryBoundedBadBound(t *testing.T) {
	node := startNode(t, "n", func(fc *fakeConn, req wire.Request) {
		fc.reply(wire.Response{ID: req.ID, Value: value(t, builtin.KVGetResult{})})
	})
	c := dial(t, testConfig(t, node.addr))
	ctx := context.Background()
	for i, bound := range []time.Duration{0, -1, -time.Hour} {
		if err := c.QueryBounded(ctx, builtin.KVGet, []byte("k"), nil, nil, bound); !errors.Is(err, ErrBadArguments) {
			t.Errorf("#%d: bound %v: got %v, want ErrBadArguments", i, bound, err)
		}
	}
	if err := c.Query(ctx, builtin.KVGet, []byte("k"), nil, nil, Consistency(7)); !errors.Is(err, ErrBadArguments) {
		t.Errorf("consistency 7: got %v, want ErrBadArguments", err)
	}
	if n := len(node.requests(wire.OpInvoke)); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}

// TestTypedCallErrors checks that a failed typed call returns R's zero value and an error
// that matches the package's sentinels.
func TestTypedCallErrors(t *testing.T) {
	node := startNode(t, "n", func(fc *fakeConn, req wire.Request) {
		fc.reply(wire.Response{ID: req.ID, Code: wire.CodeProcedureError, Message: "insufficient funds"})
	})
	c := dial(t, testConfig(t, node.addr))
	ctx := context.Background()
	if got, err := InvokeAs[int64](ctx, c, builtin.CounterAdd, nil, builtin.CounterAddArgs{Delta: 1}); got != 0 || !errors.Is(err, ErrBadArguments) {
		t.Errorf("empty key: got %d, %v, want 0, %v", got, err, ErrBadArguments)
	}
	res, err := InvokeMultiAs[builtin.BankTransferResult](ctx, c, builtin.BankTransfer, nil, builtin.BankTransferArgs{From: "a", To: "b", Amount: 1})
	if res != (builtin.BankTransferResult{}) || !errors.Is(err, ErrProcedure) {
		t.Errorf("procedure error: got %+v, %v, want zero, %v", res, err, ErrProcedure)
	}
}
