package window

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/vmihailenco/msgpack/v5"
	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves an engine's goroutines behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The engine tests drive an Aggregate through a real partition.Engine with two test
// procedures: "win.process", whose arguments are a batch of records it hands to Process one
// by one, and "win.advance", which calls Advance. Each returns, as its result, every window
// result and late record its operator produced, in order.

// rec is one test record.
type rec struct {
	Key string
	T   int64 // event time, Unix ms
	V   int64
}

// agg is the test aggregate: a sum, a count and a map (whose msgpack encoding must not
// depend on map order, or replicas would hash differently).
type agg struct {
	Sum     int64
	Count   int64
	Buckets map[string]int64
}

func addAgg(s agg, v int64) agg {
	if s.Buckets == nil {
		s.Buckets = map[string]int64{}
	}
	s.Sum += v
	s.Count++
	s.Buckets[fmt.Sprint(v%4)]++
	return s
}

func mergeAgg(a, b agg) agg {
	if a.Buckets == nil {
		a.Buckets = map[string]int64{}
	}
	a.Sum += b.Sum
	a.Count += b.Count
	for k, n := range b.Buckets {
		a.Buckets[k] += n
	}
	return a
}

// event is one output of the operator: a window result, or a late record.
type event struct {
	Late      bool
	Key       string
	Start     int64 // window bounds; for a late record, its event time in Start
	End       int64
	Value     agg
	Revision  int
	Final     bool
	Retracted bool
	V         int64 // a late record's value
	Watermark int64 // the watermark a late record was late for
}

func (e event) String() string {
	if e.Late {
		return fmt.Sprintf("late(%q t=%d v=%d wm=%d)", e.Key, e.Start, e.V, e.Watermark)
	}
	return fmt.Sprintf("%q[%d,%d) r%d final=%t retracted=%t sum=%d n=%d %v", e.Key, e.Start, e.End,
		e.Revision, e.Final, e.Retracted, e.Value.Sum, e.Value.Count, e.Value.Buckets)
}

// opConfig is the part of an operator's Config a test chooses.
type opConfig struct {
	Assigner                        Assigner
	OutOfOrderness, AllowedLateness int64
	ProcessingTime                  bool
	Panes                           bool
	FailKey                         string // Emit and Late fail for this key
}

// testHandler runs the test procedures with its own Aggregate, whose callbacks collect
// into the handler's buffer; the engine makes one handler per goroutine.
type testHandler struct {
	op     *Aggregate[int64, agg]
	events []event
}

func newTestHandler(t tb, c opConfig) *testHandler {
	h := &testHandler{}
	op, err := New(Config[int64, agg]{
		Name: "w", Assigner: c.Assigner,
		OutOfOrderness: c.OutOfOrderness, AllowedLateness: c.AllowedLateness,
		ProcessingTime: c.ProcessingTime, Panes: c.Panes,
		Init:  func() agg { return agg{} },
		Add:   addAgg,
		Merge: mergeAgg,
		Emit: func(_ *partition.Tx, r Result[agg]) error {
			if c.FailKey != "" && string(r.Key) == c.FailKey {
				return fmt.Errorf("emit %s: refused", r.Key)
			}
			h.events = append(h.events, event{Key: string(r.Key), Start: r.Start, End: r.End, Value: r.Value,
				Revision: r.Revision, Final: r.Final, Retracted: r.Retracted})
			return nil
		},
		Late: func(_ *partition.Tx, l LateRecord[int64]) error {
			if c.FailKey != "" && string(l.Key) == c.FailKey {
				return fmt.Errorf("late %s: refused", l.Key)
			}
			h.events = append(h.events, event{Late: true, Key: string(l.Key), Start: l.EventTime, V: l.Value, Watermark: l.Watermark})
			return nil
		},
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.op = op
	return h
}

func (h *testHandler) Run(tx *partition.Tx, in *partition.Input, out []byte) ([]byte, error) {
	h.events = h.events[:0]
	switch in.Procedure {
	case "win.process":
		var recs []rec
		if err := msgpack.Unmarshal(in.Args, &recs); err != nil {
			return out, err
		}
		for _, r := range recs {
			if err := h.op.Process(tx, []byte(r.Key), r.T, r.V); err != nil {
				return out, err
			}
		}
	case "win.processNow": // processing time: the batch time is the event time
		var recs []rec
		if err := msgpack.Unmarshal(in.Args, &recs); err != nil {
			return out, err
		}
		for _, r := range recs {
			if err := h.op.Process(tx, []byte(r.Key), BatchTime(tx), r.V); err != nil {
				return out, err
			}
		}
	case "win.advance":
		if err := h.op.Advance(tx); err != nil {
			return out, err
		}
	default:
		return out, fmt.Errorf("no procedure %q", in.Procedure)
	}
	var b bytes.Buffer
	enc := msgpack.NewEncoder(&b)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(h.events); err != nil {
		return out, err
	}
	return append(out, b.Bytes()...), nil
}

// harness is an engine running the test procedures on one partition of two.
type harness struct {
	t    tb
	eng  *partition.Engine
	part int
	seq  uint64
}

func newHarness(t tb, c opConfig, part int, sequential bool) *harness {
	t.Helper()
	eng, err := partition.NewEngine(partition.Config{Partitions: 2, Sequential: sequential},
		func() partition.Handler { return newTestHandler(t, c) })
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	t.Cleanup(eng.Close)
	return &harness{t: t, eng: eng, part: part}
}

// input builds an input of proc at batch time nowMs with records recs (none for advance).
func (h *harness) input(proc string, nowMs int64, recs []rec) partition.Input {
	h.seq++
	in := partition.Input{Procedure: proc, Partition: h.part, Seq: h.seq, Time: nowMs * 1e6}
	if recs != nil {
		b, err := msgpack.Marshal(recs)
		if err != nil {
			h.t.Fatalf("encode: %v", err)
		}
		in.Args = b
	}
	return in
}

// execute runs inputs as one batch and returns their outputs, or the first error.
func (h *harness) execute(ins ...partition.Input) ([]event, error) {
	var out []event
	for _, r := range h.eng.Execute(ins) {
		if r.Err != nil {
			return out, r.Err
		}
		var evs []event
		if err := msgpack.Unmarshal(r.Value, &evs); err != nil {
			h.t.Fatalf("decode result: %v", err)
		}
		out = append(out, evs...)
	}
	return out, nil
}

// must is execute for inputs that must succeed.
func (h *harness) must(ins ...partition.Input) []event {
	h.t.Helper()
	evs, err := h.execute(ins...)
	if err != nil {
		h.t.Fatalf("execute: %v", err)
	}
	return evs
}

// dump renders the partition's tables and hash; equal dumps mean equal state.
func (h *harness) dump() string {
	var b bytes.Buffer
	p := h.eng.Partitions()[h.part]
	fmt.Fprintf(&b, "hash %016x recomputed %016x\n", p.Hash(), p.RecomputeHash())
	for _, name := range p.Tables() {
		fmt.Fprintf(&b, "table %s\n", name)
		p.Scan(name, partition.ScanOptions{}, func(k, v []byte) bool {
			fmt.Fprintf(&b, "  %x=%x\n", k, v)
			return true
		})
	}
	return b.String()
}

// rows returns the number of rows of table on the harness's partition.
func (h *harness) rows(table string) int { return h.eng.Partitions()[h.part].Rows(table) }

// tb is the part of testing.TB the helpers use; *testing.T and *rapid.T have it.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}
