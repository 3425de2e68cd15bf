package nexbench

import (
	"testing"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/sql"
)

// TestWindowedUpstream: the SQL q5 and q7 are views over windowed views' final rows, so
// their results are due when those windows close (the latency from the watermark);
// q0–q3 and q8 (a windowed join of streams) read no windowed view.
func TestWindowedUpstream(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want bool
	}{{"q0", false}, {"q1", false}, {"q2", false}, {"q3", false}, {"q5", true}, {"q7", true}, {"q8", false}} {
		views, ok := nexmark.SQLText(tc.q)
		if !ok {
			t.Fatalf("no SQL for %s", tc.q)
		}
		art, err := sql.Compile(nexmark.SQLStreamsText("1 second")+views, sql.Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		v := &art.Plan.Views[len(art.Plan.Views)-1]
		if v.Name != tc.q {
			t.Fatalf("%s: last view is %s", tc.q, v.Name)
		}
		lateness, got := windowedUpstream(art.Plan, v)
		if got != tc.want || lateness != 0 {
			t.Errorf("%s: windowedUpstream = %d, %v; want 0, %v", tc.q, lateness, got, tc.want)
		}
	}
}
