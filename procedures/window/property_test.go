package window

import (
	"fmt"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"pgregory.net/rapid"
)

// entry is one log entry of a scenario: its batch time and either records or an Advance.
type entry struct {
	now  int64
	recs []rec // nil: an Advance
}

type scenario struct {
	c       opConfig
	inOrder bool // every record is at most OutOfOrderness behind the highest before it
	entries []entry
}

func drawScenario(t *rapid.T) scenario {
	var s scenario
	switch rapid.IntRange(0, 2).Draw(t, "assigner") {
	case 0:
		s.c.Assigner = Tumbling{rapid.Int64Range(5, 30).Draw(t, "size")}
	case 1:
		size := rapid.Int64Range(5, 30).Draw(t, "size")
		s.c.Assigner = Hopping{size, rapid.Int64Range(max(1, size/6), size).Draw(t, "slide")}
	default:
		s.c.Assigner = Session{rapid.Int64Range(3, 25).Draw(t, "gap")}
	}
	s.inOrder = rapid.Bool().Draw(t, "inOrder")
	s.c.OutOfOrderness = rapid.Int64Range(0, 30).Draw(t, "ooo")
	s.c.AllowedLateness = rapid.Int64Range(0, 40).Draw(t, "lateness")
	if !s.inOrder {
		s.c.ProcessingTime = rapid.Bool().Draw(t, "processingTime")
	}
	now, maxT := int64(10_000), int64(10_000)
	for range rapid.IntRange(1, 25).Draw(t, "entries") {
		now += rapid.Int64Range(0, 40).Draw(t, "dt")
		e := entry{now: now}
		if rapid.IntRange(0, 3).Draw(t, "kind") > 0 {
			for range rapid.IntRange(1, 5).Draw(t, "records") {
				r := rec{Key: rapid.SampledFrom([]string{"", "a", "b", "a\x00"}).Draw(t, "key"), V: rapid.Int64Range(0, 9).Draw(t, "v")}
				if s.inOrder {
					r.T = maxT - s.c.OutOfOrderness + rapid.Int64Range(0, s.c.OutOfOrderness+20).Draw(t, "t")
				} else {
					r.T = now + rapid.Int64Range(-150, 20).Draw(t, "lag")
				}
				maxT = max(maxT, r.T)
				e.recs = append(e.recs, r)
			}
		}
		s.entries = append(s.entries, e)
	}
	// A last record far ahead closes every window but its own.
	s.entries = append(s.entries, entry{now: now + 1, recs: []rec{{Key: "zz", T: maxT + 10_000}}})
	return s
}

// runSplit runs the scenario through an engine, cutting each entry's records into inputs
// and the inputs into Execute calls at random. It returns every output in order and the
// partition's state after each entry that ended an Execute call, by entry index.
func runSplit(t *rapid.T, s scenario, label string) ([]event, map[int]string) {
	h := newHarness(t, s.c, rapid.IntRange(0, 1).Draw(t, label+"part"), rapid.Bool().Draw(t, label+"sequential"))
	var out []event
	states := map[int]string{}
	var pending []partition.Input
	flush := func() {
		out = append(out, h.must(pending...)...)
		pending = pending[:0]
	}
	for i, e := range s.entries {
		if e.recs == nil {
			pending = append(pending, h.input("win.advance", e.now, nil))
		}
		for j := 0; j < len(e.recs); {
			n := rapid.IntRange(1, len(e.recs)-j).Draw(t, label+"cut")
			pending = append(pending, h.input("win.process", e.now, e.recs[j:j+n]))
			j += n
		}
		if i == len(s.entries)-1 || rapid.Bool().Draw(t, label+"flush") {
			flush()
			states[i] = h.dump()
		}
	}
	return out, states
}

// TestAggregateProperties drives the operator through a real engine with random inputs
// and checks it against the reference model and against values computed from the whole
// input. The results are the same however the records are cut into inputs and batches
// (DESIGN.md invariant 1).
func TestAggregateProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := drawScenario(t)
		got, states := runSplit(t, s, "a.")

		m := newModel(s.c)
		for _, e := range s.entries {
			if e.recs == nil {
				m.advance(e.now)
			}
			for _, r := range e.recs {
				m.process(e.now, r)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(m.out) {
			t.Fatalf("engine and model differ:\n engine %v\n model  %v", got, m.out)
		}

		again, states2 := runSplit(t, s, "b.")
		if fmt.Sprint(again) != fmt.Sprint(got) {
			t.Fatalf("another split gave other results:\n %v\n %v", again, got)
		}
		for i, st := range states2 {
			if want, ok := states[i]; ok && st != want {
				t.Fatalf("after entry %d, another split left another state:\n%s\nwant\n%s", i, st, want)
			}
		}
		checkWholeInput(t, s, got)
	})
}

// checkWholeInput checks the outputs against what follows from the whole input: the
// watermark at each step from its definition, the late records, each window's final
// value and its number of results.
func checkWholeInput(t *rapid.T, s scenario, got []event) {
	var steps []wmStep
	var recs []rec
	for _, e := range s.entries {
		if e.recs == nil {
			steps = append(steps, wmStep{now: e.now})
		}
		for _, r := range e.recs {
			steps = append(steps, wmStep{now: e.now, t: r.T, record: true})
			recs = append(recs, r)
		}
	}
	wcfg := WatermarkConfig{OutOfOrderness: s.c.OutOfOrderness, ProcessingTime: s.c.ProcessingTime}
	marks := run(wcfg, steps)
	l := s.c.AllowedLateness

	// Results per window, in order; every window's revisions count from 0 and only its
	// last result is Final.
	type wkey struct {
		key   string
		start int64
	}
	results := map[wkey][]event{}
	var late []string
	accepted := 0
	for _, e := range got {
		if e.Late {
			late = append(late, fmt.Sprintf("%q@%d=%d", e.Key, e.Start, e.V))
			continue
		}
		k := wkey{e.Key, e.Start}
		if e.Revision != len(results[k]) || (len(results[k]) > 0 && results[k][len(results[k])-1].Final) {
			t.Fatalf("window %v: result %v after %v", k, e, results[k])
		}
		results[k] = append(results[k], e)
	}
	for k, rs := range results {
		last := rs[len(rs)-1]
		if k.key != "zz" && !last.Final {
			t.Fatalf("window %v: no Final result: %v", k, rs)
		}
		if !last.Retracted && k.key != "zz" {
			accepted += int(last.Value.Count)
		}
		if s.inOrder && l == 0 && (len(rs) != 1 || last.Retracted) {
			t.Fatalf("in order, no lateness: window %v has results %v, want one", k, rs)
		}
	}
	if s.inOrder && len(late) > 0 {
		t.Fatalf("in order: late records %v", late)
	}

	session := false
	if _, ok := s.c.Assigner.(Session); ok {
		session = true
	}
	if session {
		// Each accepted record is in exactly one final session.
		if want := len(recs) - 1 - len(late); accepted != want {
			t.Fatalf("sessions hold %d records, %d were not late", accepted, want)
		}
		return
	}

	// Fixed windows: a record is late when all its windows are closed at its step; a
	// window's value is the sum of the records placed in it; it emits once when it fires,
	// once per record placed after it fired, and once when it closes unless it fired
	// closed.
	sums := map[wkey]agg{}
	placements := map[wkey][]int{}
	var wantLate []string
	step := 0
	for i, st := range steps {
		if !st.record {
			continue
		}
		r := recs[step]
		step++
		placed := false
		for _, w := range s.c.Assigner.Assign(r.T, nil) {
			if w.End+l <= marks[i] {
				continue
			}
			placed = true
			k := wkey{r.Key, w.Start}
			sums[k] = addAgg(sums[k], r.V)
			placements[k] = append(placements[k], i)
		}
		if !placed {
			wantLate = append(wantLate, fmt.Sprintf("%q@%d=%d", r.Key, r.T, r.V))
		}
	}
	if fmt.Sprint(late) != fmt.Sprint(wantLate) {
		t.Fatalf("late records %v, want %v", late, wantLate)
	}
	for k := range sums {
		if k.key == "zz" {
			delete(sums, k)
			delete(results, k)
		}
	}
	if len(results) != len(sums) {
		t.Fatalf("%d windows emitted, %d have records", len(results), len(sums))
	}
	for k, want := range sums {
		rs := results[k]
		if len(rs) == 0 {
			t.Fatalf("window %v: no results", k)
		}
		end := rs[0].End
		if last := rs[len(rs)-1]; fmt.Sprint(last.Value) != fmt.Sprint(want) {
			t.Fatalf("window %v: final value %v, want %v", k, last.Value, want)
		}
		n := 1 // fires
		ps := placements[k]
		for _, p := range ps[1:] {
			if end <= marks[p] {
				n++ // placed after it fired: a revision
			}
		}
		for i := ps[0]; i < len(marks); i++ {
			if end <= marks[i] { // the step it fires in
				if end+l > marks[i] {
					n++ // it closes later, with its own Final result
				}
				break
			}
		}
		if len(rs) != n {
			t.Fatalf("window %v [.., %d): %d results %v, want %d", k, end, len(rs), rs, n)
		}
	}
}
