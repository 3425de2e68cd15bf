package window

import (
	"errors"
	"testing"

	"pgregory.net/rapid"
)

// wmStep is one step of a watermark: at batch time now, with a record's event time or not.
type wmStep struct {
	now    int64
	t      int64
	record bool
}

func drawWatermarkConfig(t *rapid.T) WatermarkConfig {
	return WatermarkConfig{
		Table:          "wm",
		OutOfOrderness: rapid.Int64Range(0, 50).Draw(t, "ooo"),
		ProcessingTime: rapid.Bool().Draw(t, "processingTime"),
	}
}

// drawSteps draws steps with non-decreasing batch times, as a sequencer stamps them, and
// event times around them, in and out of order.
func drawSteps(t *rapid.T) []wmStep {
	n := rapid.IntRange(0, 40).Draw(t, "n")
	now := rapid.Int64Range(-1000, 1000).Draw(t, "start")
	steps := make([]wmStep, n)
	for i := range steps {
		now += rapid.Int64Range(0, 40).Draw(t, "dt")
		steps[i] = wmStep{now: now, record: rapid.Bool().Draw(t, "record")}
		if steps[i].record {
			steps[i].t = now + rapid.Int64Range(-200, 50).Draw(t, "lag")
		}
	}
	return steps
}

// referenceWatermark is the watermark after steps[:i+1] computed from the whole history
// at once: the highest of (every event time so far − OutOfOrderness) and, with
// ProcessingTime, (every batch time so far − OutOfOrderness).
func referenceWatermark(c WatermarkConfig, steps []wmStep, i int) int64 {
	mark := int64(NoWatermark)
	for _, s := range steps[:i+1] {
		if c.ProcessingTime {
			mark = max(mark, s.now-c.OutOfOrderness)
		}
		if s.record {
			mark = max(mark, s.t-c.OutOfOrderness)
		}
	}
	return mark
}

func run(c WatermarkConfig, steps []wmStep) []int64 {
	s := watermarkState{Mark: NoWatermark}
	marks := make([]int64, len(steps))
	for i, st := range steps {
		var t *int64
		if st.record {
			t = &st.t
		}
		s = c.next(s, st.now, t)
		got, ok := decodeWatermark(s.encode())
		if !ok || got != s {
			panic("watermark state does not survive encoding")
		}
		marks[i] = s.Mark
	}
	return marks
}

// TestWatermarkProperties: the watermark never goes backwards; it equals its definition
// computed from the whole history; a record's event time minus the out-of-orderness is
// never ahead of it; and Advance calls between records do not change the watermark after
// the next record (so it does not depend on when the engine ticks).
func TestWatermarkProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawWatermarkConfig(t)
		steps := drawSteps(t)
		marks := run(c, steps)
		for i, m := range marks {
			if i > 0 && m < marks[i-1] {
				t.Fatalf("step %d: watermark went back from %d to %d", i, marks[i-1], m)
			}
			if want := referenceWatermark(c, steps, i); m != want {
				t.Fatalf("step %d %+v: watermark %d, want %d", i, steps[i], m, want)
			}
			if steps[i].record && m < steps[i].t-c.OutOfOrderness {
				t.Fatalf("step %d: watermark %d behind event time %d − %d", i, m, steps[i].t, c.OutOfOrderness)
			}
		}
		// Without the Advance steps, the watermark after each record is the same.
		var records []wmStep
		var want []int64
		for i, s := range steps {
			if s.record {
				records = append(records, s)
				want = append(want, marks[i])
			}
		}
		for i, m := range run(c, records) {
			if m != want[i] {
				t.Fatalf("record %d: watermark %d without ticks, %d with", i, m, want[i])
			}
		}
	})
}

// TestWatermarkIgnoresBatchTime: an event-time watermark moves only with event times; a
// pause in the input (batch time passing, Advance steps) does not make a backfill of old
// records late. The idle rule that moved it to batch time − OutOfOrderness − IdleDelay
// made 5 of 5 week-old records late after an 11 s pause (issue 20, item 3).
func TestWatermarkIgnoresBatchTime(t *testing.T) {
	const week = 7 * 24 * 3600 * 1000
	c := WatermarkConfig{Table: "wm", OutOfOrderness: 5_000}
	now := int64(1_800_000_000_000)
	s := watermarkState{Mark: NoWatermark}
	old := now - week
	for i := range 5 {
		s = c.next(s, now, &[]int64{old + int64(i)*1000}[0])
	}
	want := old + 4000 - 5000
	for _, pause := range []int64{1_000, 11_000, 3600_000} {
		s = c.next(s, now+pause, nil)
		if s.Mark != want {
			t.Fatalf("after a pause of %d ms: watermark %d, want %d (the last event time − 5 s)", pause, s.Mark, want)
		}
	}
	pt := WatermarkConfig{Table: "wm", OutOfOrderness: 10, ProcessingTime: true}
	if got := pt.next(watermarkState{Mark: NoWatermark}, 1000, nil).Mark; got != 990 {
		t.Fatalf("processing time: watermark %d at batch time 1000, want 990", got)
	}
}

func TestNewWatermarkValidate(t *testing.T) {
	for i, c := range []WatermarkConfig{
		{},
		{Table: "wm", OutOfOrderness: -1},
		{Table: "wm", OutOfOrderness: MaxSpan + 1},
	} {
		if _, err := NewWatermark(c); !errors.Is(err, ErrBadConfig) {
			t.Errorf("#%d: NewWatermark(%+v) = %v, want ErrBadConfig", i, c, err)
		}
	}
}
