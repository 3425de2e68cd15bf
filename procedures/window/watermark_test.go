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
		IdleTimeout:    rapid.Int64Range(0, 60).Draw(t, "idleTimeout"),
		IdleDelay:      rapid.Int64Range(0, 30).Draw(t, "idleDelay"),
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
// at once: the highest of (every event time so far − OutOfOrderness) and (now −
// OutOfOrderness − IdleDelay at every step at least IdleTimeout after the last record
// before it).
func referenceWatermark(c WatermarkConfig, steps []wmStep, i int) int64 {
	mark := int64(NoWatermark)
	last, seen := int64(0), false
	for _, s := range steps[:i+1] {
		if seen && c.IdleTimeout > 0 && s.now-last >= c.IdleTimeout {
			mark = max(mark, s.now-c.OutOfOrderness-c.IdleDelay)
		}
		if s.record {
			mark = max(mark, s.t-c.OutOfOrderness)
			last, seen = s.now, true
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

func TestWatermarkIdleRule(t *testing.T) {
	c := WatermarkConfig{Table: "wm", OutOfOrderness: 10, IdleTimeout: 100, IdleDelay: 5}
	ts := func(v int64) *int64 { return &v }
	tests := []struct {
		now  int64
		t    *int64
		want int64
	}{
		{1000, nil, NoWatermark},   // no record yet: nothing to be idle after
		{1000, ts(500), 490},       // event time 500 − 10
		{1099, nil, 490},           // 99 ms idle: not yet
		{1100, nil, 1100 - 10 - 5}, // 100 ms idle: batch time − 10 − 5
		{1150, ts(600), 1150 - 15}, // an idle step before the record; an old record does not move it back
		{1200, nil, 1135},
		{1250, nil, 1250 - 15},
	}
	s := watermarkState{Mark: NoWatermark}
	for i, tt := range tests {
		s = c.next(s, tt.now, tt.t)
		if s.Mark != tt.want {
			t.Errorf("#%d: watermark %d, want %d", i, s.Mark, tt.want)
		}
	}
}

func TestNewWatermarkValidate(t *testing.T) {
	for i, c := range []WatermarkConfig{
		{},
		{Table: "wm", OutOfOrderness: -1},
		{Table: "wm", IdleTimeout: MaxSpan + 1},
		{Table: "wm", IdleDelay: -1},
	} {
		if _, err := NewWatermark(c); !errors.Is(err, ErrBadConfig) {
			t.Errorf("#%d: NewWatermark(%+v) = %v, want ErrBadConfig", i, c, err)
		}
	}
}
