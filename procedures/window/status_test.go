package window

import (
	"errors"
	"testing"
)

// TestReadOperator: the watermark and the late-record count are read from the partition
// outside any Tx, start at NoWatermark and 0, follow Process, and a failed step's late
// record is not counted (its Tx is undone, DESIGN.md invariant 2).
func TestReadOperator(t *testing.T) {
	h := newHarness(t, opConfig{Assigner: Tumbling{10}, FailKey: "bad"}, 1, false)
	p := h.eng.Partitions()[1]
	read := func() OperatorStatus {
		t.Helper()
		st, err := ReadOperator(p, "w")
		if err != nil {
			t.Fatalf("ReadOperator: %v", err)
		}
		return st
	}
	if got := read(); got != (OperatorStatus{Watermark: NoWatermark}) {
		t.Fatalf("before any record: got %+v, want no watermark, no late records", got)
	}
	h.must(h.input("win.process", 100, []rec{{"a", 25, 1}}))
	if got := read(); got != (OperatorStatus{Watermark: 25}) {
		t.Fatalf("after t=25: got %+v, want watermark 25", got)
	}
	h.must(h.input("win.process", 101, []rec{{"a", 3, 1}, {"b", 7, 1}, {"c", 26, 1}}))
	if got := read(); got != (OperatorStatus{Watermark: 26, Late: 2}) {
		t.Fatalf("after two late records: got %+v, want watermark 26, 2 late", got)
	}
	if _, err := h.execute(h.input("win.process", 102, []rec{{"bad", 1, 1}})); err == nil {
		t.Fatal("late record whose Late callback fails: no error")
	}
	if got := read(); got != (OperatorStatus{Watermark: 26, Late: 2}) {
		t.Fatalf("after a failed step: got %+v, want it undone (watermark 26, 2 late)", got)
	}
	if got, err := ReadOperator(p, "other"); err != nil || got != (OperatorStatus{Watermark: NoWatermark}) {
		t.Fatalf("unknown operator: got %+v, %v; want no watermark", got, err)
	}
}

// mapReader is a Reader over fixed rows.
type mapReader map[string]string

func (m mapReader) Get(table string, key []byte) ([]byte, bool) {
	v, ok := m[table+"/"+string(key)]
	return []byte(v), ok
}

// TestReadOperatorCorrupt: rows the operator did not write are ErrCorrupt, not a value.
func TestReadOperatorCorrupt(t *testing.T) {
	for i, r := range []mapReader{
		{"w.wm/wm": "short"},
		{"w.wm/late": "1234567"},
	} {
		if _, err := ReadOperator(r, "w"); !errors.Is(err, ErrCorrupt) {
			t.Errorf("#%d: got %v, want ErrCorrupt", i, err)
		}
	}
}
