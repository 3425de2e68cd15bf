package jepsen

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"slices"
	"time"
)

// writeChart draws the run as an SVG: acknowledged operations per second (bars) and the
// median and 99th-percentile latency of each second (lines, log scale), with the fault
// intervals shaded and named.
func writeChart(path string, hist []Op, timeline []Event, duration time.Duration) error {
	secs := int(duration/time.Second) + 1
	for _, op := range hist {
		secs = max(secs, int(op.End/int64(time.Second))+1)
	}
	okPer := make([]int, secs)
	lat := make([][]int64, secs)
	for _, op := range hist {
		if op.Status != StatusOK || op.Process < 0 {
			continue
		}
		s := int(op.End / int64(time.Second))
		okPer[s]++
		lat[s] = append(lat[s], op.End-op.Start)
	}
	const w, h, left, top, bottom = 900.0, 320.0, 50.0, 20.0, 40.0
	plotW, plotH := w-2*left, h-top-bottom
	x := func(t float64) float64 { return left + plotW*t/float64(secs) }
	maxOK := max(slices.Max(okPer), 1)
	yOK := func(n int) float64 { return top + plotH*(1-float64(n)/float64(maxOK)) }
	// Latency on a log scale from 100µs to 10s.
	yLat := func(ns int64) float64 {
		ms := max(float64(ns)/1e6, 0.1)
		l := min(max(math.Log10(ms), -1), 4) // -1 .. 4
		return top + plotH*(1-(l+1)/5)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%.0f" height="%.0f" fill="white"/>`+"\n", w, h)
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
			x0, x1 := x(from.Seconds()), x(ev.At.Seconds())
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="#f4c7c3" opacity="0.6"/>`+"\n", x0, top, max(x1-x0, 1), plotH)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" fill="#a33">%s</text>`+"\n", x0+2, top+12, ev.Fault)
		}
	}
	for s, n := range okPer {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#8ab4f8"/>`+"\n", x(float64(s)), yOK(n), max(plotW/float64(secs)-1, 1), top+plotH-yOK(n))
	}
	for _, q := range []struct {
		p     float64
		color string
	}{{0.5, "#188038"}, {0.99, "#e37400"}} {
		var pts bytes.Buffer
		for s, ls := range lat {
			if len(ls) == 0 {
				continue
			}
			slices.Sort(ls)
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(float64(s)+0.5), yLat(ls[int(q.p*float64(len(ls)-1))]))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", pts.String(), q.color)
	}
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", left, top+plotH, left+plotW, top+plotH)
	for s := 0; s <= secs; s += max(secs/10, 1) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%ds</text>`+"\n", x(float64(s)), top+plotH+14, s)
	}
	fmt.Fprintf(&b, `<text x="4" y="%.0f">%d ok/s</text>`+"\n", top+10, maxOK)
	for _, ms := range []float64{1, 10, 100, 1000} {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" fill="#555">%gms</text>`+"\n", left+plotW+4, yLat(int64(ms*1e6))+4, ms)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">bars: acknowledged ops per second · green: median latency · orange: p99 latency (log scale, right) · red: faults</text>`+"\n", left, h-6)
	b.WriteString("</svg>\n")
	return os.WriteFile(path, b.Bytes(), 0o644)
}
