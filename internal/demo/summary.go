package demo

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// minuteTotals sums one minute's windows over the pages: clicks = counted (in the final
// counts) + late (in the late stream), of which lateStragglers were sent as stragglers.
type minuteTotals struct {
	start                                                   int64
	pages, clicks, counted, late, lateStragglers, revisions int64
}

// compareWindows compares each page window's final count plus late clicks with what the
// producers were told: the sum must lie in [acknowledged, acknowledged + unknown]. It
// returns the totals per window start, in order, and the differences found.
func compareWindows(tally *clickTally, finals map[clickWindowKey]builtin.PageCount, late, lateStragglers map[clickWindowKey]int64) ([]*minuteTotals, []string) {
	keys := map[clickWindowKey]bool{}
	for _, m := range []map[clickWindowKey]int64{tally.acked, tally.unknown, late} {
		for k := range m {
			keys[k] = true
		}
	}
	for k := range finals {
		keys[k] = true
	}
	var problems []string
	byStart := map[int64]*minuteTotals{}
	for k := range keys {
		pc, ok := finals[k]
		if ok && !pc.Final {
			problems = append(problems, fmt.Sprintf("window %s %s never closed: %+v", k.page, minuteOf(k.start), pc))
		}
		got := pc.Count + late[k]
		if want := tally.acked[k]; got < want || got > want+tally.unknown[k] {
			problems = append(problems, fmt.Sprintf("window %s %s: counted %d (%d on time + %d late), producers had %d acknowledged, %d unknown",
				k.page, minuteOf(k.start), got, pc.Count, late[k], want, tally.unknown[k]))
		}
		m := byStart[k.start]
		if m == nil {
			m = &minuteTotals{start: k.start}
			byStart[k.start] = m
		}
		m.pages++
		m.clicks += got
		m.counted += pc.Count
		m.late += late[k]
		m.lateStragglers += lateStragglers[k]
		m.revisions += int64(pc.Revision)
	}
	slices.Sort(problems)
	minutes := make([]*minuteTotals, 0, len(byStart))
	for _, m := range byStart {
		minutes = append(minutes, m)
	}
	slices.SortFunc(minutes, func(a, b *minuteTotals) int { return int(a.start - b.start) })
	return minutes, problems
}

func minuteOf(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04") }

// pipelineSummary is what the pipeline demo reports at the end: the per-minute table and
// its totals, and the results the live view received.
type pipelineSummary struct {
	minutes                            []*minuteTotals
	acked, unknown, input              int64
	counted, late, lateStragglers, rev int64
	view                               viewCounts
	slowestAppend                      time.Duration
}

// summarize totals the minutes.
func summarize(minutes []*minuteTotals, tally *clickTally, input int64, view viewCounts, slowestAppend time.Duration) pipelineSummary {
	s := pipelineSummary{minutes: minutes, acked: tally.ackedN.Load(), unknown: tally.unknwnN.Load(), input: input,
		view: view, slowestAppend: slowestAppend}
	for _, m := range minutes {
		s.counted += m.counted
		s.late += m.late
		s.lateStragglers += m.lateStragglers
		s.rev += m.revisions
	}
	return s
}

// check compares the summary's totals with the other counts of the same things: every
// input click is in a final count or late; the view received each result once, its
// finals and revisions those of the table; the processors' late count that of the late
// stream.
func (s pipelineSummary) check(results, processorsLate int64) []string {
	var problems []string
	if s.counted+s.late != s.input {
		problems = append(problems, fmt.Sprintf("final counts %d + late clicks %d = %d, the input stream holds %d", s.counted, s.late, s.counted+s.late, s.input))
	}
	if int64(s.view.records) != results {
		problems = append(problems, fmt.Sprintf("the live view received %d window results, the stream holds %d", s.view.records, results))
	}
	if int64(s.view.revisions) != s.rev || s.view.records != s.view.finals+s.view.revisions || s.view.open != 0 {
		problems = append(problems, fmt.Sprintf("the live view received %d results (%d final, %d revisions, %d open), the final results' revisions add up to %d",
			s.view.records, s.view.finals, s.view.revisions, s.view.open, s.rev))
	}
	if processorsLate != s.late {
		problems = append(problems, fmt.Sprintf("the processors counted %d late clicks, the late stream holds %d", processorsLate, s.late))
	}
	return problems
}

// write prints the table and the totals; hashes is the replicas' state hashes, empty if
// they differ.
func (s pipelineSummary) write(out io.Writer, pipe procedures.ClickPipelineConfig, hashes string) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "window (UTC)\tpages\tclicks\tin final count\tlate: stragglers\tlate: sent on time\trevisions")
	for _, m := range s.minutes {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\n", minuteOf(m.start), m.pages, m.clicks, m.counted, m.lateStragglers, m.late-m.lateStragglers, m.revisions)
	}
	tw.Flush()
	fmt.Fprintf(out, "clicks = in final count + late. A late click reached its window after the window closed (the watermark\n")
	fmt.Fprintf(out, "passed its end + %s) and went to %s instead. Stragglers were sent %s to %s behind the producers'\n",
		pipe.AllowedLateness, pipe.Streams().Late, clickStragglerAge, 2*clickStragglerAge)
	fmt.Fprintf(out, "clock on purpose; clicks sent on time, at most %s behind, are late if their batch reached the partition after\n", clickJitter)
	fmt.Fprintf(out, "the watermark passed their window's close (the slowest append took %s, %s of event time at %d×).\n",
		s.slowestAppend.Round(time.Millisecond), (clickSpeed * s.slowestAppend).Round(time.Second), clickSpeed)
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "clicks acknowledged\t%d\n", s.acked)
	fmt.Fprintf(tw, "outcome unknown to the producers\t%d\n", s.unknown)
	fmt.Fprintf(tw, "clicks in the input stream\t%d\n", s.input)
	fmt.Fprintf(tw, "in the windows' final counts\t%d\n", s.counted)
	fmt.Fprintf(tw, "late, in no window's count\t%d: %d stragglers, %d sent on time\n", s.late, s.lateStragglers, s.late-s.lateStragglers)
	fmt.Fprintf(tw, "final counts + late\t%d\n", s.counted+s.late)
	fmt.Fprintf(tw, "window results received live\t%d: %d final, %d revisions\n", s.view.records, s.view.finals, s.view.revisions)
	if hashes != "" {
		fmt.Fprintf(tw, "state hashes, equal on every replica\t%s\n", hashes)
	}
	tw.Flush()
}
