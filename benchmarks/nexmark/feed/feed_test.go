package feed

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark/goqueries"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// TestRunAppendsEveryEvent: a feed with several workers appends each generated event
// once, to the stream of its type, as the generator makes it; a bad config is refused.
// WaitDrained then finds q0's processor caught up, with a row per bid; it fails on a
// dead letter, and waits (until its context ends) for processors that do not exist.
func TestRunAppendsEveryEvent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cluster, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: 1,
		Node: node.Config{Logger: testutil.Logger(t, slog.LevelWarn)},
		Registry: func(int) *procedures.Registry {
			r := procedures.Builtins()
			if err := goqueries.Register(r, goqueries.DefaultConfig(), "q0"); err != nil {
				panic(err)
			}
			return r
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	c, err := client.Dial(ctx, cluster.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := CreateStreams(ctx, c, builtin.StreamRetention{}); err != nil {
		t.Fatal(err)
	}
	if err := CreateStreams(ctx, c, builtin.StreamRetention{}); err != nil { // existing: fine
		t.Fatalf("second CreateStreams: %v", err)
	}
	gcfg := nexmark.Config{Events: 2000, OutOfOrderGroup: 9}
	if _, err := Run(ctx, []*client.Client{c}, Config{Generator: gcfg, Events: 2001}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("past the generator: %v, want ErrBadConfig", err)
	}
	res, err := Run(ctx, []*client.Client{c}, Config{Generator: gcfg, Events: 2000, Batch: 70, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Events != 2000 || res.Batches < 29 {
		t.Fatalf("result %+v: want 2000 events in at least 29 chunks", res)
	}
	gen, _ := nexmark.New(gcfg)
	evs, _ := gen.Slice(0, 2000)
	want := map[string]map[string]int{}
	for i := range evs {
		e := &evs[i]
		if want[e.Stream()] == nil {
			want[e.Stream()] = map[string]int{}
		}
		want[e.Stream()][string(e.Key())+"|"+string(e.Value())]++
	}
	for _, s := range []string{nexmark.StreamPerson, nexmark.StreamAuction, nexmark.StreamBid} {
		got := map[string]int{}
		d, err := c.Streams().Describe(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range d.Partitions {
			for off := uint64(0); off < p.NextOffset; {
				recs, next, err := c.ReadStream(ctx, s, int(p.Partition), off, 0)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range recs {
					got[string(r.Key)+"|"+string(r.Data)]++
				}
				off = next
			}
		}
		if len(got) != len(want[s]) {
			t.Fatalf("%s: %d distinct records, want %d", s, len(got), len(want[s]))
		}
		for k, n := range want[s] {
			if got[k] != n {
				t.Fatalf("%s: record %.40q appended %d times, want %d", s, k, got[k], n)
			}
		}
	}

	if err := WaitDrained(ctx, c, "nexmark.q0", 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	d, err := c.Streams().Describe(ctx, goqueries.Output("q0"))
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, p := range d.Partitions {
		rows += int(p.Records)
	}
	if rows != len(want[nexmark.StreamBid]) {
		t.Fatalf("q0 holds %d rows after draining, want %d", rows, len(want[nexmark.StreamBid]))
	}
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	if err := WaitDrained(short, c, "nexmark.q9", 10*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("no such processors: %v, want the context's deadline", err)
	}
	if _, err := c.Append(ctx, nexmark.StreamBid, []byte("1"), []byte("not a bid")); err != nil {
		t.Fatal(err)
	}
	if err := WaitDrained(ctx, c, "nexmark.q0", 10*time.Millisecond); !errors.Is(err, ErrDeadLetters) {
		t.Fatalf("after a bad bid: %v, want ErrDeadLetters", err)
	}
}
