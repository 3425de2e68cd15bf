// Package chart draws a run over time as an SVG: throughput per second as bars, the
// median and 99th-percentile latency of each second as lines on a log scale, and named
// intervals (faults, phases) shaded. The fault-injection harness (jepsen) and `lockstep
// bench` draw their charts with it.
//
// Usage:
//
//	svg := chart.SVG(chart.Run{Seconds: secs, Bands: faults, Caption: "..."})
//	os.WriteFile("chart.svg", svg, 0o644)
package chart

import (
	"bytes"
	"fmt"
	"math"
	"time"
)

// Second is one second of a run.
type Second struct {
	// OK is the operations acknowledged in the second.
	OK int64
	// P50 and P99 are the second's latency percentiles; zero when it had no latencies.
	P50, P99 time.Duration
}

// Band is a shaded interval, from the run's start.
type Band struct {
	From, To time.Duration
	Label    string
}

// Run is what a chart shows.
type Run struct {
	// Seconds are the run's seconds, in order from its start.
	Seconds []Second
	// Bands are shaded and labelled.
	Bands []Band
	// Unit names what OK counts ("ok/s", "ops/s"); default "ok/s".
	Unit string
	// Caption is the line under the chart; default a legend of the bars and lines.
	Caption string
}

// SVG returns the chart of r.
func SVG(r Run) []byte {
	secs := max(len(r.Seconds), 1)
	if r.Unit == "" {
		r.Unit = "ok/s"
	}
	if r.Caption == "" {
		r.Caption = "bars: acknowledged ops per second · green: median latency · orange: p99 latency (log scale, right)"
	}
	const w, h, left, top, bottom = 900.0, 320.0, 50.0, 20.0, 40.0
	plotW, plotH := w-2*left, h-top-bottom
	x := func(t float64) float64 { return left + plotW*t/float64(secs) }
	maxOK := int64(1)
	for _, s := range r.Seconds {
		maxOK = max(maxOK, s.OK)
	}
	yOK := func(n int64) float64 { return top + plotH*(1-float64(n)/float64(maxOK)) }
	// Latency on a log scale from 100µs to 10s.
	yLat := func(d time.Duration) float64 {
		ms := max(float64(d)/1e6, 0.1)
		l := min(max(math.Log10(ms), -1), 4) // -1 .. 4
		return top + plotH*(1-(l+1)/5)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%.0f" height="%.0f" fill="white"/>`+"\n", w, h)
	for _, band := range r.Bands {
		x0, x1 := x(band.From.Seconds()), x(band.To.Seconds())
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="#f4c7c3" opacity="0.6"/>`+"\n", x0, top, max(x1-x0, 1), plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" fill="#a33">%s</text>`+"\n", x0+2, top+12, band.Label)
	}
	for s, sec := range r.Seconds {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#8ab4f8"/>`+"\n", x(float64(s)), yOK(sec.OK), max(plotW/float64(secs)-1, 1), top+plotH-yOK(sec.OK))
	}
	for _, q := range []struct {
		get   func(Second) time.Duration
		color string
	}{{func(s Second) time.Duration { return s.P50 }, "#188038"}, {func(s Second) time.Duration { return s.P99 }, "#e37400"}} {
		var pts bytes.Buffer
		for s, sec := range r.Seconds {
			if sec.P99 == 0 {
				continue
			}
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(float64(s)+0.5), yLat(q.get(sec)))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", pts.String(), q.color)
	}
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", left, top+plotH, left+plotW, top+plotH)
	for s := 0; s <= secs; s += max(secs/10, 1) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%ds</text>`+"\n", x(float64(s)), top+plotH+14, s)
	}
	fmt.Fprintf(&b, `<text x="4" y="%.0f">%d %s</text>`+"\n", top+10, maxOK, r.Unit)
	for _, ms := range []float64{1, 10, 100, 1000} {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" fill="#555">%gms</text>`+"\n", left+plotW+4, yLat(time.Duration(ms*1e6))+4, ms)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`+"\n", left, h-6, r.Caption)
	b.WriteString("</svg>\n")
	return b.Bytes()
}
