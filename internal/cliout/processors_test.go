package cliout

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/client"
)

// TestWindowCells: a processor's WATERMARK is the lowest of its operators', "-" while one
// has none; LATE is their sum; both "-" without operators.
func TestWindowCells(t *testing.T) {
	wm := func(ms int64) client.WindowStatus {
		return client.WindowStatus{Watermark: ms, HasWatermark: true, Late: 1}
	}
	for i, tt := range []struct {
		ws              []client.WindowStatus
		watermark, late string
	}{
		{nil, "-", "-"},
		{[]client.WindowStatus{{Late: 2}}, "-", "2"},
		{[]client.WindowStatus{wm(1_700_000_000_123)}, "2023-11-14T22:13:20.123Z", "1"},
		{[]client.WindowStatus{wm(2000), wm(1000), wm(3000)}, "1970-01-01T00:00:01.000Z", "3"},
		{[]client.WindowStatus{wm(2000), {}}, "-", "1"},
		{[]client.WindowStatus{{}, wm(2000)}, "-", "1"},
	} {
		if w, l := WindowCells(tt.ws); w != tt.watermark || l != tt.late {
			t.Errorf("#%d: got %q, %q; want %q, %q", i, w, l, tt.watermark, tt.late)
		}
	}
}

// TestProcessorsTableTickErrors: a processor whose OnTick calls fail shows their count in
// TICKERR and the state tick-failing while the last one failed.
func TestProcessorsTableTickErrors(t *testing.T) {
	var b strings.Builder
	err := Processors(&b, Table, []client.ProcessorStatus{
		{Processor: "w", Input: "in", Partition: 0, Position: 4, End: 4, TickErrors: 7, TickFailing: true, Version: 2, Origin: "binary"},
		{Processor: "w", Input: "in", Partition: 1, Position: 2, End: 3, Lag: 1, TickErrors: 2, Version: 3, Origin: "module m v3"},
		{Processor: "w", Input: "in", Partition: 2, Waiting: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n")[1:] {
		got = append(got, strings.Join(strings.Fields(line), " "))
	}
	want := []string{
		"w in 0 4 4 0 - - 0 0 7 tick-failing 2 binary",
		"w in 1 2 3 1 - - 0 0 2 running 3 module m v3",
		"w in 2 0 0 0 - - 0 0 0 waiting 0 -",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("table rows:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
