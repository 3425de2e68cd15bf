package jepsen

import (
	"os"
	"slices"
	"time"

	"github.com/lockstepdb/lockstep/internal/chart"
)

// writeChart draws the run as an SVG (package chart): acknowledged operations per second
// (bars) and the median and 99th-percentile latency of each second (lines, log scale),
// with the fault intervals shaded and named.
func writeChart(path string, hist []Op, timeline []Event, duration time.Duration) error {
	secs := int(duration/time.Second) + 1
	for _, op := range hist {
		secs = max(secs, int(op.End/int64(time.Second))+1)
	}
	run := chart.Run{Seconds: make([]chart.Second, secs),
		Caption: "bars: acknowledged ops per second · green: median latency · orange: p99 latency (log scale, right) · red: faults"}
	lat := make([][]int64, secs)
	for _, op := range hist {
		if op.Status != StatusOK || op.Process < 0 {
			continue
		}
		s := int(op.End / int64(time.Second))
		run.Seconds[s].OK++
		lat[s] = append(lat[s], op.End-op.Start)
	}
	for s, ls := range lat {
		if len(ls) == 0 {
			continue
		}
		slices.Sort(ls)
		at := func(q float64) time.Duration { return time.Duration(ls[int(q*float64(len(ls)-1))]) }
		run.Seconds[s].P50, run.Seconds[s].P99 = at(0.5), at(0.99)
	}
	open := map[string]time.Duration{}
	for _, ev := range timeline {
		switch ev.Phase {
		case "start":
			open[ev.Fault] = ev.At
		case "heal":
			from, ok := open[ev.Fault]
			if !ok {
				continue
			}
			delete(open, ev.Fault)
			run.Bands = append(run.Bands, chart.Band{From: from, To: ev.At, Label: ev.Fault})
		}
	}
	return os.WriteFile(path, chart.SVG(run), 0o644)
}
