package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// tickRegistry is the built-ins plus processor "ticker" on stream "events", whose OnTick
// hook appends to stream "beats" on its partition (key "beat"): once "beats" is deleted,
// every tick fails, like a window whose output stream is gone.
func tickRegistry(int) *procedures.Registry {
	r := procedures.Builtins()
	procedures.MustRegisterProcessor(r, "ticker", "events", func(*partition.Tx, partition.Record) error { return nil },
		procedures.Emits("beats"), procedures.OnTick(func(tx *partition.Tx) error {
			_, err := tx.Append("beats", []byte("beat"), []byte("x"), 0)
			return err
		}))
	return r
}

// TestProcessorTickErrorsReported: a failing OnTick hook is not silent: every node shows
// its count and the tick-failing state (OpProcessors, the metric), and each partition's
// dead-letter stream holds one tick dead letter with the same error text on every
// replica (DESIGN.md section 5; invariant 1).
func TestProcessorTickErrorsReported(t *testing.T) {
	const parts = 2
	c := startCluster(t, clusterOptions{nodes: 3, partitions: parts, registry: tickRegistry,
		processorIdleTick: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	for _, s := range []string{"beats", "events"} {
		if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: s}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.Streams().Delete(ctx, "beats"); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range c.cfgs {
		testutil.WaitFor(t, 30*time.Second, func() error {
			all, err := cl.Procedures().Processors(ctx, cfg.ClientAddr)
			if err != nil {
				return err
			}
			rows := only("ticker", all)
			if len(rows) != parts {
				return fmt.Errorf("%s: rows %+v", cfg.ID, rows)
			}
			for _, r := range rows {
				if !r.TickFailing || r.TickErrors < 2 {
					return fmt.Errorf("%s: %+v, want tick-failing with at least 2 tick errors", cfg.ID, r)
				}
			}
			return nil
		})
	}
	// Every replica holds the same dead letters, one per partition: the error repeats, so
	// no more come (each node has applied at least the first failure, above).
	var want string
	for i, n := range c.Nodes {
		got := ""
		for _, p := range n.FSM().Engine().Partitions() {
			recs, _, err := p.ReadStream("events"+partition.DeadLetterSuffix, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				var dl partition.DeadLetter
				if err := msgpack.Unmarshal(r.Value, &dl); err != nil {
					t.Fatal(err)
				}
				if !dl.Tick || dl.Processor != "ticker" {
					t.Fatalf("%s: dead letter %+v, want a tick of ticker", n.ID(), dl)
				}
				got += fmt.Sprintf("p%d@%d: %s\n", p.ID(), r.Offset, dl.Error)
			}
		}
		if i == 0 {
			want = got
			if strings.Count(got, "\n") != parts {
				t.Fatalf("%s: tick dead letters\n%s\nwant one per partition", n.ID(), got)
			}
		} else if got != want {
			t.Fatalf("%s: tick dead letters\n%s\nwant (as %s)\n%s", n.ID(), got, c.Nodes[0].ID(), want)
		}
	}
	m := gather(t, c.Nodes[1].Metrics().Registry)
	for p := range parts {
		if v := m[fmt.Sprintf("lockstep_processor_tick_errors_total{partition=%d,processor=ticker}", p)]; v < 2 {
			t.Errorf("partition %d: lockstep_processor_tick_errors_total = %v, want ≥ 2", p, v)
		}
	}
}
