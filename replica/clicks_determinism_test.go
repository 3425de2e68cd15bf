package replica

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/procedures"
	"pgregory.net/rapid"
)

// The click pipeline's property test: random clicks (users, pages, event times out of
// order, some beyond the allowed lateness) in entries of random sizes and batch times,
// under a small budget so work carries over between entries, drained by ticks. The log
// is applied by FSMs that group entries into ApplyBatch calls differently, run the
// partitions in parallel or one after another, or restart from a snapshot half-way: all
// must hold byte-identical output streams, processor positions and state hashes, equal to
// the reference computed from the log alone (clickReference). The same clicks split at
// other entry boundaries give other outputs — equal to the reference of that log — that
// keep the invariants of checkClickConservation.

var clickUsers = []string{"ann", "bob", "cy", "dee", "eve", "fay"}
var clickPages = []string{"home", "cart", "faq", "news"}

// genClicks draws a log of clicks for the built-in pipeline's windows (1 minute, 5 s
// out-of-orderness, 10 s lateness, input partitions idle after 10 s).
func genClicks(t *rapid.T) []refEntry {
	now := sec(0) * 1e6
	var out []refEntry
	for range rapid.IntRange(1, 30).Draw(t, "entries") {
		switch rapid.IntRange(0, 9).Draw(t, "step kind") {
		case 0: // long enough for input partitions to go idle
			now += int64(rapid.IntRange(10, 90).Draw(t, "idle s")) * 1e9
		case 1:
		default:
			now += int64(rapid.IntRange(1, 8000).Draw(t, "step ms")) * 1e6
		}
		e := refEntry{now: now}
		for range rapid.IntRange(0, 6).Draw(t, "clicks") {
			var jitter int64 // how far the click's event time trails batch time, ms
			switch rapid.IntRange(0, 9).Draw(t, "jitter kind") {
			case 0: // beyond the allowed lateness, most likely
				jitter = int64(rapid.IntRange(20_000, 120_000).Draw(t, "late ms"))
			case 1: // ahead of batch time
				jitter = -int64(rapid.IntRange(0, 3_000).Draw(t, "ahead ms"))
			default:
				jitter = int64(rapid.IntRange(0, 20_000).Draw(t, "jitter ms"))
			}
			e.clicks = append(e.clicks, refClick{
				user: rapid.SampledFrom(clickUsers).Draw(t, "user"),
				page: rapid.SampledFrom(clickPages).Draw(t, "page"),
				t:    now/1e6 - jitter,
			})
		}
		out = append(out, e)
	}
	return out
}

// drainPage is the page of withDrain's closing click: its window never closes, and
// checkClickConservation leaves it out.
const drainPage = "zz.drain"

// withDrain appends ticks that handle every click (a second apart), then a closing click
// an hour of event time past every other, more ticks to handle it, and two ticks minutes
// apart: every input partition is then idle, the exchange watermark is the closing
// click's time − the out-of-orderness, and every window but the closing click's closes.
// Batch time alone closes nothing (docs/streams.md, "Watermarks across the exchange").
func withDrain(entries []refEntry, budget int) []refEntry {
	n := 0
	maxT := int64(0)
	for _, e := range entries {
		n += len(e.clicks)
		for _, c := range e.clicks {
			maxT = max(maxT, c.t)
		}
	}
	now := entries[len(entries)-1].now
	out := append([]refEntry(nil), entries...)
	ticks := func(k int) {
		for range k {
			now += 1e9
			out = append(out, refEntry{now: now})
		}
	}
	ticks(2*(n/budget) + 8)
	now += 1e9
	out = append(out, refEntry{now: now, clicks: []refClick{{user: "drain", page: drainPage, t: maxT + int64(time.Hour/time.Millisecond)}}})
	ticks(8)
	for range 2 {
		now += int64(5 * time.Minute)
		out = append(out, refEntry{now: now})
	}
	ticks(4)
	return out
}

// resplit puts the same clicks, in the same order, in entries of drawn sizes, each at
// the batch time of its last click's entry.
func resplit(t *rapid.T, entries []refEntry) []refEntry {
	type timed struct {
		c   refClick
		now int64
	}
	var all []timed
	for _, e := range entries {
		for _, c := range e.clicks {
			all = append(all, timed{c, e.now})
		}
	}
	var out []refEntry
	for i := 0; i < len(all); {
		n := min(rapid.IntRange(1, 5).Draw(t, "resplit size"), len(all)-i)
		e := refEntry{now: all[i+n-1].now}
		for _, tc := range all[i : i+n] {
			e.clicks = append(e.clicks, tc.c)
		}
		out = append(out, e)
		i += n
	}
	if len(out) == 0 {
		out = []refEntry{{now: entries[len(entries)-1].now}}
	}
	return out
}

func clickConfig(sequential bool, budget int) Config {
	c := propConfig(1 << 20)
	c.Sequential = sequential
	c.ProcessorBudget = budget
	return c
}

// clickState is everything compared between replicas of one log.
func clickState(t fataler, f *FSM, pc procedures.ClickPipelineConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "hashes %x\n", f.Engine().Hashes())
	for _, p := range f.Engine().Partitions() {
		if h, r := p.Hash(), p.RecomputeHash(); h != r {
			t.Fatalf("partition %d: incremental hash %x, recomputed %x", p.ID(), h, r)
		}
	}
	fmt.Fprintf(&b, "processors %+v\n", f.Processors())
	s := pc.Streams()
	b.WriteString(dumpRecords(streamRecords(t, f, s.ByPage)))
	b.WriteString(pipelineOutputs(t, f, pc))
	return b.String()
}

func checkDrained(t fataler, f *FSM, pc procedures.ClickPipelineConfig, label string) {
	for _, st := range f.Processors() {
		if strings.HasPrefix(st.Processor, pc.Prefix) && (st.Waiting || st.Lag != 0 || st.DeadLetters != 0) {
			t.Fatalf("%s: processor not drained: %+v", label, st)
		}
	}
}

func TestClickPipelineDeterminism(t *testing.T) {
	pc := procedures.DefaultClickPipeline
	rapid.Check(t, func(t *rapid.T) {
		budget := rapid.IntRange(1, 6).Draw(t, "budget")
		entries := withDrain(genClicks(t), budget)
		logs := entriesToLogs(pipelineEntries(propParts, pc, entries))

		// One entry per ApplyBatch, sequential: the baseline, equal to the reference.
		base := newPipelineFSM(t, clickConfig(true, budget), pc)
		defer base.Close()
		for _, l := range logs {
			base.ApplyBatch([]*raft.Log{l})
		}
		checkDrained(t, base, pc, "baseline")
		if got, want := pipelineOutputs(t, base, pc), referenceOutputs(pc, propParts, budget, entries); got != want {
			t.Fatalf("outputs differ from the reference\n got: %s\nwant: %s", got, want)
		}
		want := clickState(t, base, pc)
		checkClickConservation(t, pc, entries, streamRecords(t, base, pc.Streams().Counts), streamRecords(t, base, pc.Streams().Late))

		// Other groupings, parallel partitions.
		par := newPipelineFSM(t, clickConfig(false, budget), pc)
		defer par.Close()
		applyChainGrouped(t, par, logs, "parallel group")
		if got := clickState(t, par, pc); got != want {
			t.Fatalf("parallel, grouped differently: state differs\n got: %s\nwant: %s", got, want)
		}

		// A replica restored from a snapshot half-way.
		half := rapid.IntRange(0, len(logs)).Draw(t, "snapshot at")
		first := newPipelineFSM(t, clickConfig(true, budget), pc)
		defer first.Close()
		applyChainGrouped(t, first, logs[:half], "first half group")
		restored := snapshotRoundTripWith(t, first, func() *FSM { return newPipelineFSM(t, clickConfig(false, budget), pc) })
		defer restored.Close()
		applyChainGrouped(t, restored, logs[half:], "second half group")
		if got := clickState(t, restored, pc); got != want {
			t.Fatalf("restored from a snapshot at %d: state differs\n got: %s\nwant: %s", half, got, want)
		}

		// The same clicks at other entry boundaries: the reference of that log, and the
		// same invariants.
		other := withDrain(resplit(t, entries), budget)
		split := newPipelineFSM(t, clickConfig(rapid.Bool().Draw(t, "split sequential"), budget), pc)
		defer split.Close()
		applyChainGrouped(t, split, entriesToLogs(pipelineEntries(propParts, pc, other)), "split group")
		checkDrained(t, split, pc, "split")
		if got, want := pipelineOutputs(t, split, pc), referenceOutputs(pc, propParts, budget, other); got != want {
			t.Fatalf("split: outputs differ from the reference\n got: %s\nwant: %s", got, want)
		}
		checkClickConservation(t, pc, other, streamRecords(t, split, pc.Streams().Counts), streamRecords(t, split, pc.Streams().Late))
	})
}
