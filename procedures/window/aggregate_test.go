package window

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
)

// checkEvents compares outputs by their String form, which shows every field.
func checkEvents(t *testing.T, step string, got []event, want ...event) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\n got  %v\n want %v", step, got, want)
	}
}

func win(key string, start, end int64, rev int, final bool, vs ...int64) event {
	var a agg
	for _, v := range vs {
		a = addAgg(a, v)
	}
	return event{Key: key, Start: start, End: end, Value: a, Revision: rev, Final: final}
}

// TestTumblingFiresRevisesCloses walks one window through its life: fired when the
// watermark passes its end, revised by a record within the allowed lateness, closed with
// a Final result and dropped when the watermark passes end + lateness; a later record
// for it is late.
func TestTumblingFiresRevisesCloses(t *testing.T) {
	h := newHarness(t, opConfig{Assigner: Tumbling{10}, AllowedLateness: 20}, 1, false)
	p := func(now int64, r rec) []event { return h.must(h.input("win.process", now, []rec{r})) }

	checkEvents(t, "t=1", p(100, rec{"a", 1, 1}))
	checkEvents(t, "t=12", p(101, rec{"a", 12, 2}), win("a", 0, 10, 0, false, 1))
	checkEvents(t, "t=5 revises", p(102, rec{"a", 5, 3}), win("a", 0, 10, 1, false, 1, 3))
	checkEvents(t, "t=31", p(103, rec{"a", 31, 1}),
		win("a", 10, 20, 0, false, 2),  // fires first: the fire queue runs before the close queue
		win("a", 0, 10, 2, true, 1, 3)) // 10 + 20 ≤ 31: closed, Final
	checkEvents(t, "t=8 late", p(104, rec{"a", 8, 7}),
		event{Late: true, Key: "a", Start: 8, V: 7, Watermark: 31})
	tb := h.eng.Partitions()[1]
	if got := tb.Rows("w.win"); got != 2 { // [10,20) fired and open; [30,40)
		t.Errorf("state rows %d, want 2", got)
	}
	if got := tb.Rows("w.fire"); got != 1 {
		t.Errorf("fire queue rows %d, want 1", got)
	}
	if got := tb.Rows("w.close"); got != 2 {
		t.Errorf("close queue rows %d, want 2", got)
	}
}

// TestHoppingPartlyLate: a record is late only when every window it falls in is closed;
// otherwise it joins the open ones.
func TestHoppingPartlyLate(t *testing.T) {
	h := newHarness(t, opConfig{Assigner: Hopping{Size: 10, Slide: 5}}, 0, true)
	p := func(now int64, r rec) []event { return h.must(h.input("win.process", now, []rec{r})) }
	checkEvents(t, "t=12", p(1, rec{"k", 12, 1}))
	checkEvents(t, "t=9: [0,10) is closed, [5,15) open", p(2, rec{"k", 9, 5}))
	checkEvents(t, "t=26", p(4, rec{"k", 26, 1}),
		win("k", 5, 15, 0, true, 1, 5), win("k", 10, 20, 0, true, 1))
	checkEvents(t, "t=14 late", p(5, rec{"k", 14, 1}), event{Late: true, Key: "k", Start: 14, V: 1, Watermark: 26})
}

// TestPauseKeepsBackfillOnTime: an event-time operator's watermark does not follow
// batch time: a backfill of week-old records with an 11 s pause loses nothing to "late",
// and the windows the records passed fire; Advance with no record changes nothing. The
// old idle rule moved the watermark to batch time and made all 5 late (issue 20, item 3).
func TestPauseKeepsBackfillOnTime(t *testing.T) {
	const week = 7 * 24 * 3600 * 1000
	h := newHarness(t, opConfig{Assigner: Tumbling{10_000}, OutOfOrderness: 5_000}, 0, false)
	now := int64(1_800_000_000_000)
	old := now - week - (now-week)%10_000 // a window start
	checkEvents(t, "first half", h.must(h.input("win.process", now, []rec{{"a", old, 1}, {"a", old + 1000, 1}})))
	checkEvents(t, "idle 11 s", h.must(h.input("win.advance", now+11_000, nil)))
	checkEvents(t, "second half, on time", h.must(h.input("win.process", now+11_001,
		[]rec{{"a", old + 2000, 1}, {"a", old + 3000, 1}, {"a", old + 4000, 1}})))
	checkEvents(t, "idle an hour", h.must(h.input("win.advance", now+3600_000, nil)))
	checkEvents(t, "a later record fires the window", h.must(h.input("win.process", now+3600_001, []rec{{"a", old + 15_000, 1}})),
		win("a", old, old+10_000, 0, true, 1, 1, 1, 1, 1))
}

// TestProcessingTimeWindows: with the batch time as event time, windows fire as batch
// time passes, by records or by Advance, and nothing is ever late.
func TestProcessingTimeWindows(t *testing.T) {
	h := newHarness(t, opConfig{Assigner: Tumbling{10}, ProcessingTime: true}, 0, false)
	checkEvents(t, "1000", h.must(h.input("win.processNow", 1000, []rec{{"a", 0, 1}})))
	checkEvents(t, "1005", h.must(h.input("win.processNow", 1005, []rec{{"a", 0, 2}})))
	checkEvents(t, "advance 1009", h.must(h.input("win.advance", 1009, nil)))
	checkEvents(t, "advance 1010", h.must(h.input("win.advance", 1010, nil)), win("a", 1000, 1010, 0, true, 1, 2))
	checkEvents(t, "1012", h.must(h.input("win.processNow", 1012, []rec{{"a", 0, 3}})))
	checkEvents(t, "1020", h.must(h.input("win.processNow", 1020, []rec{{"a", 0, 4}})), win("a", 1010, 1020, 0, true, 3))
}

// TestSessionBridge: a late record that bridges two fired sessions merges them; the
// session it starts in keeps its identity and emits a revision, the other is retracted.
func TestSessionBridge(t *testing.T) {
	h := newHarness(t, opConfig{Assigner: Session{Gap: 10}, AllowedLateness: 100}, 0, false)
	p := func(now int64, r rec) []event { return h.must(h.input("win.process", now, []rec{r})) }
	checkEvents(t, "t=0", p(1, rec{"a", 0, 1}))
	checkEvents(t, "t=30", p(2, rec{"a", 30, 1}), win("a", 0, 10, 0, false, 1))
	checkEvents(t, "t=50", p(3, rec{"a", 50, 1}), win("a", 30, 40, 0, false, 1))
	checkEvents(t, "t=15: a new session, already behind the watermark", p(4, rec{"a", 15, 1}),
		win("a", 15, 25, 0, false, 1))
	retracted := win("a", 30, 40, 1, true, 1)
	retracted.Retracted = true
	checkEvents(t, "t=22 bridges [15,25) and [30,40)", p(5, rec{"a", 22, 1}),
		retracted, win("a", 15, 40, 1, false, 1, 1, 1))
	checkEvents(t, "t=3 extends [0,10) to [0,13), short of [15,40)", p(6, rec{"a", 3, 1}),
		win("a", 0, 13, 1, false, 1, 1))
	if n := h.rows("w.win"); n != 3 {
		t.Errorf("sessions stored %d, want 3", n)
	}
	checkEvents(t, "t=200 fires [50,60) and closes everything but its own session", p(7, rec{"a", 200, 1}),
		win("a", 50, 60, 0, true, 1), win("a", 0, 13, 2, true, 1, 1), win("a", 15, 40, 2, true, 1, 1, 1))
}

// TestFailureLeavesNoTrace: an Emit or Late error fails the input, and the Tx undoes the
// whole step: watermark, window state and queues (DESIGN.md invariant 2).
func TestFailureLeavesNoTrace(t *testing.T) {
	h := newHarness(t, opConfig{Assigner: Tumbling{10}, AllowedLateness: 5, FailKey: "x"}, 1, false)
	h.must(h.input("win.process", 1, []rec{{"x", 3, 1}, {"a", 4, 1}}))
	before := h.dump()
	if _, err := h.execute(h.input("win.process", 2, []rec{{"a", 30, 1}})); err == nil {
		t.Fatal("closing the window of x: no error from its Emit")
	}
	if after := h.dump(); after != before {
		t.Fatalf("a failed input changed the state:\n%s\nwant\n%s", after, before)
	}
	if _, err := h.execute(h.input("win.process", 3, []rec{{"a", 5, 1}, {"a", 12, 1}})); err == nil {
		t.Fatal("firing the window of x: no error from its Emit")
	}
	if after := h.dump(); after != before {
		t.Fatalf("a failed input changed the state:\n%s\nwant\n%s", after, before)
	}
}

func TestNewValidate(t *testing.T) {
	ok := Config[int64, agg]{
		Name: "w", Assigner: Tumbling{10}, Init: func() agg { return agg{} }, Add: addAgg,
		Emit: func(*partition.Tx, Result[agg]) error { return nil },
	}
	if _, err := New(ok); err != nil {
		t.Fatalf("New(valid): %v", err)
	}
	bad := []func(*Config[int64, agg]){
		func(c *Config[int64, agg]) { c.Name = "" },
		func(c *Config[int64, agg]) { c.Name = string(bytes.Repeat([]byte("n"), partition.MaxNameBytes)) },
		func(c *Config[int64, agg]) { c.Assigner = nil },
		func(c *Config[int64, agg]) { c.Assigner = Hopping{10, 20} },
		func(c *Config[int64, agg]) { c.Assigner = Session{5} }, // no Merge
		func(c *Config[int64, agg]) { c.AllowedLateness = -1 },
		func(c *Config[int64, agg]) { c.OutOfOrderness = MaxSpan + 1 },
		func(c *Config[int64, agg]) { c.Init = nil },
		func(c *Config[int64, agg]) { c.Emit = nil },
	}
	for i, f := range bad {
		c := ok
		f(&c)
		if _, err := New(c); !errors.Is(err, ErrBadConfig) {
			t.Errorf("#%d: New = %v, want ErrBadConfig", i, err)
		}
	}
}

// TestStateEncodingDeterministic: a state holding a map encodes to the same bytes every
// time, whatever Go's map iteration order (the bytes are hashed, invariant 1).
func TestStateEncodingDeterministic(t *testing.T) {
	st := windowState[agg]{End: 10, Value: agg{Buckets: map[string]int64{}}}
	for i := range 50 {
		st.Value.Buckets[fmt.Sprint("k", i)] = int64(i)
	}
	first, err := encodeState(stateCodecs.New().(*stateCodec), &st, scalarState(reflect.TypeFor[agg]()))
	if err != nil {
		t.Fatal(err)
	}
	first = bytes.Clone(first)
	for i := range 20 {
		if b, _ := encodeState(stateCodecs.Get().(*stateCodec), &st, false); !bytes.Equal(b, first) {
			t.Fatalf("#%d: encoding differs", i)
		}
	}
}

// TestStateEncodingScalar: a scalar state skips the canonical rewrite, which would not
// change its bytes; a struct, encoded as a map, does not skip it (invariant 1).
func TestStateEncodingScalar(t *testing.T) {
	type named int64
	type noMap struct{ B, A int64 }
	for i, tt := range []struct {
		typ  reflect.Type
		want bool
	}{
		{reflect.TypeFor[int64](), true}, {reflect.TypeFor[named](), true}, {reflect.TypeFor[float64](), true},
		{reflect.TypeFor[string](), true}, {reflect.TypeFor[bool](), true}, {reflect.TypeFor[uint8](), true},
		{reflect.TypeFor[noMap](), false}, {reflect.TypeFor[[]int64](), false}, {reflect.TypeFor[any](), false},
		{reflect.TypeFor[agg](), false}, {reflect.TypeFor[*int64](), false},
	} {
		if got := scalarState(tt.typ); got != tt.want {
			t.Errorf("#%d scalarState(%v): got %t, want %t", i, tt.typ, got, tt.want)
		}
	}
	check := func(name string, got, want []byte, err1, err2 error) {
		t.Helper()
		if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: got %x (%v), want %x (%v)", name, got, err1, want, err2)
		}
	}
	for _, v := range []int64{0, -1, 127, -33, 1 << 40, -1 << 62} {
		st := windowState[int64]{End: v, Emitted: 70000, Value: v}
		got, err1 := encodeState(stateCodecs.New().(*stateCodec), &st, true)
		want, err2 := encodeState(stateCodecs.New().(*stateCodec), &st, false)
		check(fmt.Sprint("int64 ", v), got, want, err1, err2)
	}
	for _, v := range []string{"", "s", strings.Repeat("x", 300)} {
		st := windowState[string]{End: -5, Value: v}
		got, err1 := encodeState(stateCodecs.New().(*stateCodec), &st, true)
		want, err2 := encodeState(stateCodecs.New().(*stateCodec), &st, false)
		check("string", got, want, err1, err2)
	}
	st := windowState[float64]{End: 1, Value: 2.5}
	got, err1 := encodeState(stateCodecs.New().(*stateCodec), &st, true)
	want, err2 := encodeState(stateCodecs.New().(*stateCodec), &st, false)
	check("float64", got, want, err1, err2)
}

// TestSessionExtendedBackwards: a record that starts a fired session earlier retracts it
// (with its own value, untouched by the merge) and the merged session fires anew.
func TestSessionExtendedBackwards(t *testing.T) {
	h := newHarness(t, opConfig{Assigner: Session{Gap: 10}, AllowedLateness: 100}, 0, false)
	p := func(now int64, r rec) []event { return h.must(h.input("win.process", now, []rec{r})) }
	checkEvents(t, "t=20", p(1, rec{"a", 20, 1}))
	checkEvents(t, "t=40", p(2, rec{"a", 40, 1}), win("a", 20, 30, 0, false, 1))
	retracted := win("a", 20, 30, 1, true, 1)
	retracted.Retracted = true
	checkEvents(t, "t=15", p(3, rec{"a", 15, 2}), retracted, win("a", 15, 30, 0, false, 1, 2))
}

// TestEventTimeRange: an event time outside MinTime..MaxTime fails the input, typed.
func TestEventTimeRange(t *testing.T) {
	h := newHarness(t, opConfig{Assigner: Tumbling{10}}, 0, true)
	for _, ts := range []int64{MaxTime + 1, MinTime - 1} {
		if _, err := h.execute(h.input("win.process", 1, []rec{{"a", ts, 1}})); !errors.Is(err, ErrTimeRange) {
			t.Errorf("event time %d: error %v, want ErrTimeRange", ts, err)
		}
	}
	h.must(h.input("win.process", 1, []rec{{"a", MaxTime, 1}, {"a", MinTime, 1}}))
}
