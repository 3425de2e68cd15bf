package demo

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

var (
	liveLineRE = regexp.MustCompile(`^ *\d+ clicks/s +(\d+) acked \| clock [^|]+\| results (\d+): (\d+) final, (\d+) revisions \| late (\S+)$`)
	tableRowRE = regexp.MustCompile(`^\d\d:\d\d +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+)$`)
	totalRE    = regexp.MustCompile(`^([a-z][a-z',+ ]*[a-z]) {2,}(\d+)(?:: (\d+) (?:stragglers|final), (\d+) (?:sent on time|revisions))?$`)
)

// pipelineOutputProblems checks that the pipeline demo's output says the same thing
// everywhere: the last live line (after the wait) agrees with the summary, the table's
// columns add up to the summary's totals, and the totals to each other. It returns the
// differences.
func pipelineOutputProblems(out string) []string {
	var last []string
	var rows [6]int64
	totals := map[string][]int64{}
	for _, line := range strings.Split(out, "\n") {
		if m := liveLineRE.FindStringSubmatch(line); m != nil {
			last = m[1:]
		}
		if m := tableRowRE.FindStringSubmatch(line); m != nil {
			for i := range rows {
				rows[i] += atoi(m[i+1])
			}
		}
		if m := totalRE.FindStringSubmatch(line); m != nil {
			var v []int64
			for _, s := range m[2:] {
				if s != "" {
					v = append(v, atoi(s))
				}
			}
			totals[m[1]] = v
		}
	}
	var problems []string
	get := func(name string, n int) []int64 {
		v := totals[name]
		if len(v) != n {
			problems = append(problems, fmt.Sprintf("summary line %q: got %v, want %d numbers", name, v, n))
			return make([]int64, n)
		}
		return v
	}
	acked := get("clicks acknowledged", 1)[0]
	input := get("clicks in the input stream", 1)[0]
	counted := get("in the windows' final counts", 1)[0]
	late := get("late, in no window's count", 3)
	sum := get("final counts + late", 1)[0]
	results := get("window results received live", 3)
	if len(problems) > 0 {
		return problems
	}
	if last == nil {
		return []string{"no live line"}
	}
	if got := fmt.Sprint(acked, results[0], results[1], results[2], late[0]); got != strings.Join(last, " ") {
		problems = append(problems, fmt.Sprintf("the last live line says acked, results, final, revisions, late = %v; the summary %v", last, got))
	}
	if late[0] != late[1]+late[2] || sum != counted+late[0] || sum != input {
		problems = append(problems, fmt.Sprintf("totals disagree: counted %d + late %d (%d + %d) = %d, input %d", counted, late[0], late[1], late[2], sum, input))
	}
	if results[0] != results[1]+results[2] {
		problems = append(problems, fmt.Sprintf("results %d != %d final + %d revisions", results[0], results[1], results[2]))
	}
	if want := [6]int64{rows[0], sum, counted, late[1], late[2], results[2]}; rows != want {
		problems = append(problems, fmt.Sprintf("table columns add up to (pages, clicks, in final count, late stragglers, late on time, revisions) %v, the totals say %v", rows, want))
	}
	return problems
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64) // the expressions match digits only
	return n
}

// TestPipelineSummaryAgrees: the summary and the last live line, written from the
// same counts, say the same thing; the checker catches a line that does not.
func TestPipelineSummaryAgrees(t *testing.T) {
	tally := newClickTally(60_000_000_000)
	a, b, c := clickWindowKey{"/a", 0}, clickWindowKey{"/b", 0}, clickWindowKey{"/a", 60_000}
	tally.acked[a], tally.acked[b], tally.acked[c] = 10, 7, 5
	tally.ackedN.Store(22)
	finals := map[clickWindowKey]builtin.PageCount{
		a: {Page: "/a", Count: 8, Revision: 2, Final: true},
		b: {Page: "/b", Count: 7, Final: true},
		c: {Page: "/a", Start: 60_000, Count: 4, Revision: 1, Final: true},
	}
	late := map[clickWindowKey]int64{a: 2, c: 1}
	minutes, problems := compareWindows(tally, finals, late, map[clickWindowKey]int64{a: 1})
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	view := viewCounts{records: 6, finals: 3, revisions: 3}
	st := pipelineStatus{late: 3, hasMark: true, partitions: 1}
	sum := summarize(minutes, tally, 22, view, 0)
	if p := sum.check(6, 3); len(p) != 0 {
		t.Fatalf("check: %q", p)
	}
	var out bytes.Buffer
	out.WriteString(liveLine(0, 22, "stopped at 00:02:00", &st, view) + "\n")
	sum.write(&out, procedures.DefaultClickPipeline, "")
	if p := pipelineOutputProblems(out.String()); len(p) > 0 {
		t.Errorf("%q in:\n%s", p, out.String())
	}
	if !strings.Contains(out.String(), "3: 1 stragglers, 2 sent on time") {
		t.Errorf("late line:\n%s", out.String())
	}

	// The same summary after a live line with other counts: the checker must fail.
	var bad bytes.Buffer
	bad.WriteString(liveLine(0, 22, "stopped at 00:02:00", &st, viewCounts{records: 5, finals: 3, revisions: 2}) + "\n")
	sum.write(&bad, procedures.DefaultClickPipeline, "")
	if p := pipelineOutputProblems(bad.String()); len(p) != 1 || !strings.Contains(p[0], "the last live line") {
		t.Errorf("checker passed a last live line that disagrees with the summary:\n%s", bad.String())
	}
}

// TestRepeatedLine: the check of TestRunPipeline finds the old demo's final wait, which
// printed the same live line a second until the watermark moved.
func TestRepeatedLine(t *testing.T) {
	old := "waiting for the watermark to pass the last windows (idle partitions advance by batch time)...\n" +
		"      0 clicks/s | window results: 2927 received, 80 final, 2827 revisions\n" +
		"      0 clicks/s | window results: 2927 received, 80 final, 2827 revisions\n"
	if repeatedLine(old) == "" {
		t.Error("repeated line not found")
	}
	if line := repeatedLine("  1s: waiting\n  2s: waiting\n\n\n"); line != "" {
		t.Errorf("found %q in lines that differ", line)
	}
}

// TestPipelineSummaryCheck: the summary's own checks fail when its totals disagree with
// the other counts of the same things.
func TestPipelineSummaryCheck(t *testing.T) {
	base := pipelineSummary{input: 10, counted: 8, late: 2, rev: 3, view: viewCounts{records: 5, finals: 2, revisions: 3}}
	if p := base.check(5, 2); len(p) != 0 {
		t.Fatalf("consistent summary: %q", p)
	}
	for i, c := range []struct {
		mod                     func(*pipelineSummary)
		results, processorsLate int64
		want                    string
	}{
		{func(s *pipelineSummary) { s.input = 11 }, 5, 2, "the input stream holds 11"},
		{func(*pipelineSummary) {}, 6, 2, "the stream holds 6"},
		{func(s *pipelineSummary) { s.view.open = 1 }, 5, 2, "1 open"},
		{func(s *pipelineSummary) { s.rev = 4 }, 5, 2, "add up to 4"},
		{func(*pipelineSummary) {}, 5, 3, "the processors counted 3 late clicks"},
	} {
		s := base
		c.mod(&s)
		p := s.check(c.results, c.processorsLate)
		if len(p) != 1 || !strings.Contains(p[0], c.want) {
			t.Errorf("#%d: got %q, want one problem saying %q", i, p, c.want)
		}
	}
}

// TestReadPipelineStatus: the slowest watermark is the lowest of the partitions that have
// one; the pipeline is done when every partition reached the target with nothing to
// handle.
func TestReadPipelineStatus(t *testing.T) {
	pipe := procedures.DefaultClickPipeline
	counter := pipe.Prefix + builtin.PageCountsStream
	st := []client.ProcessorStatus{
		{Processor: pipe.Prefix + builtin.ClicksByPageStream, Partition: 0, Lag: 3},
		{Processor: counter, Partition: 0, Windows: []client.WindowStatus{{}}},
		{Processor: counter, Partition: 1, Windows: []client.WindowStatus{{Watermark: 500, HasWatermark: true, Late: 2}}},
		{Processor: counter, Partition: 2, Windows: []client.WindowStatus{{Watermark: 300, HasWatermark: true, Late: 1}}},
		{Processor: "other", Partition: 0, Lag: 100},
	}
	s := readPipelineStatus(st, pipe, 400)
	if s.partitions != 3 || s.past != 1 || s.slowest != 300 || s.hasMark || s.lag != 3 || s.late != 3 || s.done() {
		t.Fatalf("got %+v", s)
	}
	if got := waitingFor(s, 400); got != "3 clicks to handle; a partition has no watermark yet" {
		t.Errorf("waiting for %q", got)
	}
	st[0].Lag = 0
	st[1].Windows[0] = client.WindowStatus{Watermark: 400, HasWatermark: true}
	st[3].Windows[0].Watermark = 450
	if s := readPipelineStatus(st, pipe, 400); !s.done() || s.slowest != 400 {
		t.Errorf("got %+v, want done", s)
	}
}
