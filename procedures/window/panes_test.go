package window

import (
	"fmt"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"pgregory.net/rapid"
)

// TestPanesMatchWindows: a hopping operator with Panes gives exactly the results and late
// records of the same operator without, for random inputs in and out of order, however
// they are cut into inputs and batches; and two runs with panes leave equal state.
func TestPanesMatchWindows(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := drawScenario(t)
		slide := rapid.Int64Range(1, 8).Draw(t, "paneSlide")
		s.c.Assigner = Hopping{Size: slide * rapid.Int64Range(1, 6).Draw(t, "panes"), Slide: slide}
		s.c.AllowedLateness = 0
		want, _ := runSplit(t, s, "w.")
		s.c.Panes = true
		got, states := runSplit(t, s, "p.")
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("panes and windows differ:\n panes   %v\n windows %v", got, want)
		}
		again, states2 := runSplit(t, s, "q.")
		if fmt.Sprint(again) != fmt.Sprint(got) {
			t.Fatalf("another split gave other results:\n %v\n %v", again, got)
		}
		for i, st := range states2 {
			if w, ok := states[i]; ok && st != w {
				t.Fatalf("after entry %d, another split left another state:\n%s\nwant\n%s", i, st, w)
			}
		}
	})
}

// TestPanesState: a record updates one pane row, not a row per window, and the panes
// are gone once their windows fired.
func TestPanesState(t *testing.T) {
	h := newHarness(t, opConfig{Assigner: Hopping{Size: 10, Slide: 2}, OutOfOrderness: 100, Panes: true}, 0, false)
	var recs []rec
	for i := range 10 {
		recs = append(recs, rec{Key: "a", T: 1_000 + int64(i)})
	}
	h.must(h.input("win.process", 1, recs))
	// Panes [1000,1002) … [1008,1010); the windows holding them start at 992 … 1008.
	if n, q, c := h.rows("w.win"), h.rows("w.fire"), h.rows("w.close"); n != 5 || q != 9 || c != 0 {
		t.Fatalf("10 records over 5 panes: %d state rows, %d fire rows, %d close rows; want 5, 9, 0", n, q, c)
	}
	out := h.must(h.input("win.process", 2, []rec{{Key: "b", T: 2_000}}))
	if len(out) != 9 {
		t.Fatalf("the watermark passing 1,018 (2,000 - 100) fires the 9 windows of the 5 panes: %d results %v", len(out), out)
	}
	for _, e := range out {
		lo, hi := max(e.Start, 1_000), min(e.End, 1_010)
		if e.Value.Count != hi-lo || !e.Final || e.Revision != 0 {
			t.Fatalf("window %v: want %d records, Final revision 0", e, hi-lo)
		}
	}
	// Left: key b's pane and its 5 windows.
	if n, q := h.rows("w.win"), h.rows("w.fire"); n != 1 || q != 5 {
		t.Fatalf("after key a's windows fired: %d state rows, %d fire rows; want 1 and 5:\n%s", n, q, h.dump())
	}
}

// TestPanesValidate: panes need hopping windows whose size is a multiple of the slide,
// no allowed lateness, and Merge.
func TestPanesValidate(t *testing.T) {
	for _, c := range []struct {
		a        Assigner
		lateness int64
		merge    bool
		ok       bool
	}{
		{Hopping{Size: 10, Slide: 2}, 0, true, true},
		{Hopping{Size: 10, Slide: 10}, 0, true, true},
		{Hopping{Size: 10, Slide: 3}, 0, true, false},
		{Hopping{Size: 10, Slide: 2}, 1, true, false},
		{Hopping{Size: 10, Slide: 2}, 0, false, false},
		{Tumbling{10}, 0, true, false},
		{Session{10}, 0, true, false},
	} {
		cfg := Config[int64, agg]{Name: "w", Assigner: c.a, AllowedLateness: c.lateness, Panes: true,
			Init: func() agg { return agg{} }, Add: addAgg, Emit: func(*partition.Tx, Result[agg]) error { return nil }}
		if c.merge {
			cfg.Merge = mergeAgg
		}
		_, err := New(cfg)
		if (err == nil) != c.ok {
			t.Errorf("%+v: New: %v, want ok=%t", c, err, c.ok)
		}
	}
}
