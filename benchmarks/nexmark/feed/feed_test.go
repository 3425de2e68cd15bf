package feed

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// TestRunAppendsEveryEvent: a feed with several workers appends each generated event
// once, to the stream of its type, as the generator makes it; a bad config is refused.
func TestRunAppendsEveryEvent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cluster, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: 1,
		Node: node.Config{Logger: testutil.Logger(t, slog.LevelWarn)}})
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
}
