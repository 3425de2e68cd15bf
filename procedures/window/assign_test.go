package window

import (
	"errors"
	"slices"
	"testing"
)

func TestTumblingAssign(t *testing.T) {
	tests := []struct {
		size, t int64
		want    Window
	}{
		{10, 0, Window{0, 10}},
		{10, 9, Window{0, 10}},
		{10, 10, Window{10, 20}},
		{10, 25, Window{20, 30}},
		{10, -1, Window{-10, 0}},
		{10, -10, Window{-10, 0}},
		{10, -11, Window{-20, -10}},
		{60_000, 1_700_000_123_456, Window{1_700_000_100_000, 1_700_000_160_000}},
	}
	for i, tt := range tests {
		got := Tumbling{tt.size}.Assign(tt.t, nil)
		if len(got) != 1 || got[0] != tt.want {
			t.Errorf("#%d: Tumbling{%d}.Assign(%d) = %v, want [%v]", i, tt.size, tt.t, got, tt.want)
		}
		if !got[0].Contains(tt.t) {
			t.Errorf("#%d: %v does not contain %d", i, got[0], tt.t)
		}
	}
}

func TestHoppingAssign(t *testing.T) {
	tests := []struct {
		size, slide, t int64
		want           []Window
	}{
		{10, 5, 0, []Window{{-5, 5}, {0, 10}}},
		{10, 5, 4, []Window{{-5, 5}, {0, 10}}},
		{10, 5, 5, []Window{{0, 10}, {5, 15}}},
		{10, 5, 12, []Window{{5, 15}, {10, 20}}},
		{10, 3, 10, []Window{{3, 13}, {6, 16}, {9, 19}}},
		{10, 3, 9, []Window{{0, 10}, {3, 13}, {6, 16}, {9, 19}}},
		{10, 10, 17, []Window{{10, 20}}}, // slide == size is tumbling
		{10, 4, -1, []Window{{-8, 2}, {-4, 6}}},
	}
	for i, tt := range tests {
		got := Hopping{tt.size, tt.slide}.Assign(tt.t, nil)
		if !slices.Equal(got, tt.want) {
			t.Errorf("#%d: Hopping{%d,%d}.Assign(%d) = %v, want %v", i, tt.size, tt.slide, tt.t, got, tt.want)
		}
	}
}

// TestHoppingAssignExhaustive checks Assign against the definition — every window
// [k·slide, k·slide+size) containing t — for small sizes and times.
func TestHoppingAssignExhaustive(t *testing.T) {
	for size := int64(1); size <= 12; size++ {
		for slide := int64(1); slide <= size; slide++ {
			for ts := int64(-30); ts <= 30; ts++ {
				var want []Window
				for k := int64(-60); k <= 60; k++ {
					if w := (Window{k * slide, k*slide + size}); w.Contains(ts) {
						want = append(want, w)
					}
				}
				if got := (Hopping{size, slide}).Assign(ts, nil); !slices.Equal(got, want) {
					t.Fatalf("Hopping{%d,%d}.Assign(%d) = %v, want %v", size, slide, ts, got, want)
				}
			}
		}
	}
}

func TestAssignerValidate(t *testing.T) {
	tests := []struct {
		a  Assigner
		ok bool
	}{
		{Tumbling{1}, true},
		{Tumbling{0}, false},
		{Tumbling{-5}, false},
		{Tumbling{MaxSpan + 1}, false},
		{Hopping{10, 5}, true},
		{Hopping{10, 10}, true},
		{Hopping{10, 11}, false}, // a slide longer than the size would leave gaps
		{Hopping{10, 0}, false},
		{Hopping{MaxHops, 1}, true},
		{Hopping{MaxHops + 1, 1}, false},
		{Session{1}, true},
		{Session{0}, false},
	}
	for i, tt := range tests {
		err := tt.a.validate()
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrBadConfig)) {
			t.Errorf("#%d: %#v.validate() = %v, want ok %v", i, tt.a, err, tt.ok)
		}
	}
}
