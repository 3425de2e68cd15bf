package client

import (
	"context"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// BenchmarkCounterAdd measures the client's cost per invocation against a fake node that
// answers at once, with a context that never ends and with one deadline per call (the
// caller's own context allocations count too). allocs/op counts the fake node's share as
// well (reading and decoding the request, in the same process): compare runs, not
// absolute numbers.
func BenchmarkCounterAdd(b *testing.B) {
	one := value(b, int64(1))
	n := startNode(b, "n", func(fc *fakeConn, req wire.Request) {
		fc.reply(wire.Response{ID: req.ID, Value: one})
	})
	c := dial(b, testConfig(b, n.addr))
	for _, deadline := range []bool{false, true} {
		name := "background"
		if deadline {
			name = "deadline"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					ctx, cancel := context.Background(), context.CancelFunc(func() {})
					if deadline {
						ctx, cancel = context.WithTimeout(ctx, time.Minute)
					}
					_, err := c.CounterAdd(ctx, "counter", 1)
					cancel()
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkKVGet measures a call without arguments and with a struct result: the path of
// the helpers that send builtin.NoArgs through the generic calls.
func BenchmarkKVGet(b *testing.B) {
	res := value(b, map[string]any{"v": []byte("value"), "f": true})
	n := startNode(b, "n", func(fc *fakeConn, req wire.Request) {
		fc.reply(wire.Response{ID: req.ID, Value: res})
	})
	c := dial(b, testConfig(b, n.addr))
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := c.KVGet(context.Background(), []byte("key")); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
