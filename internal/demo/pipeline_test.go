package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil/pgtest"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// testPipelineConfig is a short pipeline run: 6 s of 4 producers on 3 nodes, the leader
// killed halfway.
func testPipelineConfig() PipelineConfig {
	cfg := DefaultPipelineConfig()
	cfg.Duration, cfg.Clients = 6*time.Second, 4
	return cfg
}

// TestRunPipeline runs the pipeline demo: clicks through the built-in pipeline on 3
// nodes with the leader killed, then the exactly-once check. Its output must agree with
// itself (pipelineOutputProblems: the last live line with the summary, the table with
// the totals) and never repeat a line, as the old final wait did when it looked hung.
func TestRunPipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster for about 20 s")
	}
	var out bytes.Buffer
	err := RunPipeline(context.Background(), testPipelineConfig(), &out)
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{"killed the leader", "restarted n", "waiting for the watermark to reach", "every partition's watermark reached",
		"exactly-once check passed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if p := pipelineOutputProblems(out.String()); len(p) > 0 {
		t.Errorf("the output disagrees with itself: %q\n%s", p, out.String())
	}
	if line := repeatedLine(out.String()); line != "" {
		t.Errorf("line %q printed twice in a row:\n%s", line, out.String())
	}
}

// repeatedLine returns a non-empty line that the output prints twice in a row, if any.
func repeatedLine(out string) string {
	lines := strings.Split(out, "\n")
	for i := 1; i < len(lines); i++ {
		if lines[i] != "" && lines[i] == lines[i-1] {
			return lines[i]
		}
	}
	return ""
}

// TestRunPipelineSink runs the pipeline demo with the PostgreSQL sink: a second sink
// instance takes over midway, and the table must hold every window result once.
func TestRunPipelineSink(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster for about 20 s")
	}
	db := pgtest.New(t)
	cfg := testPipelineConfig()
	cfg.SinkDSN, cfg.SinkSchema = db.DSN, db.Schema
	var out bytes.Buffer
	err := RunPipeline(context.Background(), cfg, &out)
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{"sink 1 copies", "sink 2 started", "holds every window result exactly once", "exactly-once check passed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestCompareWindowsCatchesLossAndDuplicates: the demo's check fails on a window that
// counted a click twice, one that lost one, and one never closed; it passes within the
// unknown margin.
func TestCompareWindowsCatchesLossAndDuplicates(t *testing.T) {
	tally := newClickTally(60_000_000_000)
	a, b, c, d := clickWindowKey{"/a", 0}, clickWindowKey{"/b", 0}, clickWindowKey{"/c", 60_000}, clickWindowKey{"/d", 60_000}
	tally.acked[a], tally.acked[b], tally.acked[c], tally.acked[d] = 10, 10, 5, 3
	tally.unknown[d] = 2
	finals := map[clickWindowKey]builtin.PageCount{
		a: {Page: "/a", Count: 9, Final: true},  // with 2 late: one doubled
		b: {Page: "/b", Count: 9, Final: true},  // one lost
		c: {Page: "/c", Count: 5, Final: false}, // still open
		d: {Page: "/d", Count: 4, Final: true},  // one of the unknown ones landed: fine
	}
	late := map[clickWindowKey]int64{a: 2}
	minutes, problems := compareWindows(tally, finals, late, map[clickWindowKey]int64{a: 1})
	if len(problems) != 3 {
		t.Fatalf("want 3 problems (doubled, lost, open), got %d: %q", len(problems), problems)
	}
	for i, want := range []string{"/a 00:00: counted 11", "/b 00:00: counted 9", "/c 00:01 never closed"} {
		if !strings.Contains(problems[i], want) {
			t.Errorf("problem %d = %q, want it to say %q", i, problems[i], want)
		}
	}
	if m := minutes[0]; m.start != 0 || m.pages != 2 || m.clicks != 20 || m.counted != 18 || m.late != 2 || m.lateStragglers != 1 {
		t.Errorf("minute 0 totals %+v", *m)
	}
	delete(finals, a)
	delete(finals, b)
	finals[c] = builtin.PageCount{Page: "/c", Count: 5, Final: true}
	tally.acked[a], tally.acked[b] = 2, 0
	if _, problems := compareWindows(tally, finals, late, nil); len(problems) != 0 {
		t.Fatalf("want no problem, got %q", problems)
	}
}
