package node

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/procedures/window"
)

// windowRegistry is the built-ins plus processor "sums" on stream "events": it fails on
// the value "bad", and counts the others in 10-second tumbling windows of event time
// (operator "sums.w", declared with WindowOperators), writing results to table "sums".
func windowRegistry(int) *procedures.Registry {
	r := procedures.Builtins()
	op, err := window.New(window.Config[struct{}, int64]{
		Name:     "sums.w",
		Assigner: window.Tumbling{Size: 10_000},
		Init:     func() int64 { return 0 },
		Add:      func(n int64, _ struct{}) int64 { return n + 1 },
		Emit: func(tx *partition.Tx, res window.Result[int64]) error {
			return tx.Put("sums", fmt.Appendf(nil, "%s/%d", res.Key, res.Start), fmt.Append(nil, res.Value))
		},
	})
	if err != nil {
		panic(err)
	}
	procedures.MustRegisterProcessor(r, "sums", "events", func(tx *partition.Tx, rec partition.Record) error {
		if string(rec.Value) == "bad" {
			return errors.New("bad record")
		}
		return op.Process(tx, rec.Key, rec.EventTime, struct{}{})
	}, procedures.WindowOperators("sums.w"), procedures.OnTick(op.Advance))
	return r
}

// TestProcessorsOp: every node answers OpProcessors from its applied state: waiting
// before the input stream exists; then position, end, lag, dead letters and the window
// operator's watermark and late count, the same on every replica (DESIGN.md invariant 1);
// and the node's metrics carry the same numbers.
func TestProcessorsOp(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3, partitions: 2, registry: windowRegistry})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	noWM := []client.WindowStatus{{Operator: "sums.w"}}
	waiting := []client.ProcessorStatus{
		{Processor: "sums", Input: "events", Partition: 0, Version: 1, Origin: "binary", Waiting: true, Windows: noWM},
		{Processor: "sums", Input: "events", Partition: 1, Version: 1, Origin: "binary", Waiting: true, Windows: noWM},
	}
	for _, cfg := range c.cfgs {
		got, err := cl.Procedures().Processors(ctx, cfg.ClientAddr)
		if err != nil {
			t.Fatalf("%s: %v", cfg.ID, err)
		}
		if got = only("sums", got); !reflect.DeepEqual(got, waiting) {
			t.Fatalf("%s before the stream exists:\n got %+v\nwant %+v", cfg.ID, got, waiting)
		}
	}
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: "events"}); err != nil {
		t.Fatal(err)
	}
	// One key, so one partition: two records in [0s, 10s), a failing one, one at 25s that
	// moves the watermark past the first window's end (it fires and closes), and one at
	// 0.5s, late for it.
	ms := time.UnixMilli
	offs, err := cl.AppendBatch(ctx, "events", []client.StreamRecord{
		{Key: []byte("k"), Value: []byte("a"), EventTime: ms(1000)},
		{Key: []byte("k"), Value: []byte("b"), EventTime: ms(2000)},
		{Key: []byte("k"), Value: []byte("bad"), EventTime: ms(3000)},
		{Key: []byte("k"), Value: []byte("c"), EventTime: ms(25_000)},
		{Key: []byte("k"), Value: []byte("d"), EventTime: ms(500)},
	})
	if err != nil {
		t.Fatal(err)
	}
	part := partition.PartitionOf([]byte("k"), 2)
	want := []client.ProcessorStatus{
		{Processor: "sums", Input: "events", Partition: 0, Version: 1, Origin: "binary", Windows: noWM},
		{Processor: "sums", Input: "events", Partition: 1, Version: 1, Origin: "binary", Windows: noWM},
	}
	want[part] = client.ProcessorStatus{Processor: "sums", Input: "events", Partition: part, Version: 1, Origin: "binary",
		Position: offs[4] + 1, End: offs[4] + 1, DeadLetters: 1,
		Windows: []client.WindowStatus{{Operator: "sums.w", Watermark: 25_000, HasWatermark: true, Late: 1}}}
	for _, cfg := range c.cfgs {
		testutil.WaitFor(t, 30*time.Second, func() error {
			all, err := cl.Procedures().Processors(ctx, cfg.ClientAddr)
			got := only("sums", all)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(got, want) {
				return fmt.Errorf("%s:\n got %+v\nwant %+v", cfg.ID, got, want)
			}
			return nil
		})
	}
	// The metrics say the same.
	m := gather(t, c.Nodes[0].Metrics().Registry)
	p := fmt.Sprint(part)
	for name, wantV := range map[string]float64{
		"lockstep_processor_lag{partition=" + p + ",processor=sums}":                                              0,
		"lockstep_processor_dead_letters_total{partition=" + p + ",processor=sums}":                               1,
		"lockstep_processor_skipped_total{partition=" + p + ",processor=sums}":                                    0,
		"lockstep_processor_waiting{partition=" + p + ",processor=sums}":                                          0,
		"lockstep_window_watermark_seconds{operator=sums.w,partition=" + p + ",processor=sums}":                   25,
		"lockstep_window_late_records_total{operator=sums.w,partition=" + p + ",processor=sums}":                  1,
		"lockstep_window_late_records_total{operator=sums.w,partition=" + fmt.Sprint(1-part) + ",processor=sums}": 0,
	} {
		if got, ok := m[name]; !ok || got != wantV {
			t.Errorf("%s = %v (present %t), want %v", name, got, ok, wantV)
		}
	}
	if _, ok := m["lockstep_window_watermark_seconds{operator=sums.w,partition="+fmt.Sprint(1-part)+",processor=sums}"]; ok {
		t.Error("a watermark exported for the partition without records")
	}
}

// gather returns every sample of reg as name{label=value,...} → value, labels sorted.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			name := f.GetName() + "{"
			for i, l := range s.GetLabel() {
				if i > 0 {
					name += ","
				}
				name += l.GetName() + "=" + l.GetValue()
			}
			name += "}"
			switch {
			case s.GetGauge() != nil:
				out[name] = s.GetGauge().GetValue()
			case s.GetCounter() != nil:
				out[name] = s.GetCounter().GetValue()
			}
		}
	}
	return out
}

// only returns the rows of processor name (the built-ins' processors report too).
func only(name string, rows []client.ProcessorStatus) []client.ProcessorStatus {
	var out []client.ProcessorStatus
	for _, r := range rows {
		if r.Processor == name {
			out = append(out, r)
		}
	}
	return out
}
