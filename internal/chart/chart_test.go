package chart

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"
)

// TestSVG: the chart is well-formed XML with one bar per second, a latency point per
// second that had latencies, and the bands' labels.
func TestSVG(t *testing.T) {
	svg := SVG(Run{
		Seconds: []Second{{OK: 10, P50: time.Millisecond, P99: 5 * time.Millisecond}, {OK: 0}, {OK: 30, P50: 2 * time.Millisecond, P99: 9 * time.Millisecond}},
		Bands:   []Band{{From: time.Second, To: 2 * time.Second, Label: "partition"}},
		Unit:    "ops/s",
	})
	d := xml.NewDecoder(strings.NewReader(string(svg)))
	bars, points := 0, 0
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed: %v", err)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok {
			for _, a := range se.Attr {
				if se.Name.Local == "rect" && a.Name.Local == "fill" && a.Value == "#8ab4f8" {
					bars++
				}
				if se.Name.Local == "polyline" && a.Name.Local == "points" {
					points += len(strings.Fields(a.Value))
				}
			}
		}
	}
	if bars != 3 || points != 4 {
		t.Errorf("got %d bars and %d latency points, want 3 and 4 (two lines over the two seconds with latencies)", bars, points)
	}
	for _, want := range []string{"partition", "30 ops/s"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the chart does not show %q", want)
		}
	}
}
