package node

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// countingRegistry is the built-ins plus a processor counting the records of stream
// "clicks" per key in table "clicks.count", re-emitting each to stream "all" under one
// key (so records cross partitions).
func countingRegistry(int) *procedures.Registry {
	r := procedures.Builtins()
	procedures.MustRegisterProcessor(r, "clicks.count", "clicks", func(tx *partition.Tx, rec partition.Record) error {
		var n uint64
		if v, ok := tx.Get("clicks.count", rec.Key); ok {
			n = binary.BigEndian.Uint64(v)
		}
		if err := tx.Put("clicks.count", rec.Key, binary.BigEndian.AppendUint64(nil, n+1)); err != nil {
			return err
		}
		return tx.Emit("all", []byte("all"), rec.Key, rec.EventTime)
	}, procedures.Emits("all"))
	return r
}

// processorView is what a replica's processors produced: counts per key, records per
// key in the input stream, and records in the output stream.
type processorView struct {
	counts, inputs map[string]uint64
	outputs        int
}

func viewProcessors(t *testing.T, n *Node) processorView {
	v := processorView{counts: map[string]uint64{}, inputs: map[string]uint64{}}
	for _, p := range n.fsm.Engine().Partitions() {
		p.Scan("clicks.count", partition.ScanOptions{}, func(k, val []byte) bool {
			v.counts[string(k)] += binary.BigEndian.Uint64(val)
			return true
		})
		recs, _, err := p.ReadStream("clicks", 0, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			v.inputs[string(r.Key)]++
		}
		out, _, err := p.ReadStream("all", 0, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		v.outputs += len(out)
	}
	return v
}

// TestClusterProcessorFailover: appends through the client to a stream with a counting
// processor, the leader killed mid-stream. Every replica ends with the same hashes and
// the same processor tables, every key's count equals its records in the stream (the
// processor handled each exactly once), and lies between its acknowledged appends and
// those plus the ones whose outcome was unknown (DESIGN.md section 5, invariants 1, 3).
func TestClusterProcessorFailover(t *testing.T) {
	// A budget below the appends per entry: the processor falls behind and ticks catch up.
	c := startCluster(t, clusterOptions{nodes: 3, snapshots: true, registry: countingRegistry,
		partitions: 2, processorBudget: 1, idleChecksOnly: true, processorTick: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	setup := c.dial(ctx)
	for _, s := range []string{"clicks", "all"} {
		if err := setup.Streams().Create(ctx, builtin.StreamDefinition{Name: s}); err != nil {
			t.Fatal(err)
		}
	}
	const workers = 8
	l := c.loadThroughLeaderKill(ctx, workers, 100, func(ctx context.Context, cl *client.Client, key string) error {
		_, err := cl.Append(ctx, "clicks", []byte(key), []byte("x"))
		return err
	})
	// A burst in one entry, far beyond the budget: only ticks from the new leader drain
	// it in time (an idle cluster appends no other entries but a hash check now and then).
	const burst = 300
	recs := make([]client.StreamRecord, burst)
	for i := range recs {
		recs[i] = client.StreamRecord{Key: fmt.Appendf(nil, "burst-%d", i%10), Value: []byte("b")}
	}
	if _, err := setup.AppendBatch(ctx, "clicks", recs); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		for _, n := range c.Nodes {
			if n == nil {
				continue
			}
			for _, st := range n.FSM().Processors() {
				if st.Processor != "clicks.count" {
					continue // the built-in click pipeline's, waiting for its streams
				}
				if st.Waiting || st.Lag != 0 {
					return fmt.Errorf("node %s: %+v", n.ID(), st)
				}
			}
		}
		return nil
	})
	c.waitConverged()
	var first *processorView
	for _, n := range c.Nodes {
		if n == nil {
			continue
		}
		v := viewProcessors(t, n)
		if first == nil {
			first = &v
		} else if fmt.Sprint(v) != fmt.Sprint(*first) {
			t.Fatalf("node %s: processor state %v, another replica %v", n.ID(), v, *first)
		}
		var sum uint64
		for w := range workers {
			key := fmt.Sprintf("worker-%d", w)
			got := v.counts[key]
			if got != v.inputs[key] {
				t.Errorf("node %s %s: counted %d, stream holds %d records", n.ID(), key, got, v.inputs[key])
			}
			if got < l.acked[w] || got > l.acked[w]+l.unknown[w] {
				t.Errorf("node %s %s: count %d, want %d acknowledged + at most %d unknown", n.ID(), key, got, l.acked[w], l.unknown[w])
			}
			sum += got
		}
		for i := range 10 {
			key := fmt.Sprintf("burst-%d", i)
			if got := v.counts[key]; got != burst/10 || v.inputs[key] != burst/10 {
				t.Errorf("node %s %s: counted %d of %d records, want %d", n.ID(), key, got, v.inputs[key], burst/10)
			}
			sum += v.counts[key]
		}
		if uint64(v.outputs) != sum {
			t.Errorf("node %s: %d records emitted, %d counted", n.ID(), v.outputs, sum)
		}
	}
	t.Logf("acknowledged %d appends, %d before the kill", l.total, l.before)
}
