package replica

import (
	"bytes"
	"cmp"
	"math"
	"slices"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// The reference implementation of the click pipeline (procedures.RegisterClickPipeline):
// single-threaded, sharing no code with the engine, the processor runtime or package
// window. It computes, from the log alone — each entry's batch time and the clicks it
// appends, in order — the exact records of the output streams on every partition.
//
// It models what the runtime does (docs/streams.md, "Execution order of a log entry"):
// at the end of each entry, on each partition, the repartitioner handles at most budget
// clicks in offset order, appending those whose page belongs to its own partition to
// clicks.by_page at once and putting the others in the partition's outbox; then the
// counter handles at most budget records of clicks.by_page (the ones just appended
// included: its name sorts after the repartitioner's), then its OnTick hook; then the
// outboxes are delivered in (source partition, emit order), to be counted in the next
// entry's phase; then the exchange watermark is combined. The counter follows the window
// rules of procedures/window/doc.go, restated here for tumbling windows.
//
// Watermarks (docs/streams.md, "Watermarks across the exchange"): each input partition
// publishes its watermark (the latest click time its repartitioner saw − the
// out-of-orderness) and the batch time of its last click; at the end of each entry they
// combine into one exchange watermark — the minimum over the partitions not idle (idle:
// no click for IdleTimeout of batch time; one that never had a click counts from the
// first combination, at NoWatermark), the maximum when all are idle, never lower than
// before. The repartitioner stamps each click with the exchange watermark of the
// previous entry; the counter raises its watermark to each click's stamp before placing
// it, and to the exchange watermark on its tick when it has counted every record.
//
// The output depends on where entry boundaries fall (they decide which records a
// partition's counter sees in which order, and which stamp each click gets), so the
// reference takes the log as it is; what stays the same across boundaries is checked by
// checkClickConservation.

// refClick is one click appended by the log: the record's key is user, its value
// builtin.Click{Page: page, Time: t}, t > 0.
type refClick struct {
	user, page string
	t          int64
}

// refEntry is one log entry: its batch time in Unix nanoseconds and its clicks in order
// (none for a tick).
type refEntry struct {
	now    int64
	clicks []refClick
}

// refRecord is one record of an output stream.
type refRecord struct {
	key, value []byte
	t          int64
}

// refWindow is the state of one open window.
type refWindow struct {
	end     int64
	emitted int
	count   int64
}

type refWinKey struct {
	page  string
	start int64
}

// refOperator is the counter's state on one partition.
type refOperator struct {
	cfg          refConfig
	mark         int64
	windows      map[refWinKey]*refWindow
	counts, late *[]refRecord
}

type refConfig struct {
	size, ooo, lateness, idle int64 // milliseconds
}

// refSource is one input partition's published watermark.
type refSource struct {
	seen       bool
	mark, last int64
}

// refStamped is a click of clicks.by_page with the stamp the repartitioner gave it.
type refStamped struct {
	c     builtin.Click
	stamp int64
}

type refPipeline struct {
	cfg           refConfig
	parts, budget int
	perAppend     int               // Config.ProcessorBudgetPerAppend
	clicks        [][]builtin.Click // per partition: the input, completed as the repartitioner does
	byPage        [][]refStamped
	posIn, posBy  []int
	outbox        [][]refStamped
	ops           []*refOperator
	counts, late  [][]refRecord
	sources       []refSource
	exchange      int64 // the exchange watermark
	started       bool  // exchange combined once, at batch time start
	start         int64
}

// clickReference runs the reference over entries and returns the records of the counts
// and late streams per partition. Each entry's budget is budget plus perAppend for each
// click the entry appends.
func clickReference(cfg procedures.ClickPipelineConfig, parts, budget, perAppend int, entries []refEntry) (counts, late [][]refRecord) {
	if budget <= 0 {
		budget = partition.DefaultProcessorBudget
	}
	rc := refConfig{cfg.Window.Milliseconds(), cfg.OutOfOrderness.Milliseconds(), cfg.AllowedLateness.Milliseconds(),
		cfg.IdleTimeout.Milliseconds()}
	r := &refPipeline{cfg: rc, parts: parts, budget: budget, perAppend: perAppend,
		clicks: make([][]builtin.Click, parts), byPage: make([][]refStamped, parts),
		posIn: make([]int, parts), posBy: make([]int, parts), outbox: make([][]refStamped, parts),
		counts: make([][]refRecord, parts), late: make([][]refRecord, parts),
		sources: make([]refSource, parts), exchange: math.MinInt64}
	for q := range parts {
		r.ops = append(r.ops, &refOperator{cfg: rc, mark: math.MinInt64, windows: map[refWinKey]*refWindow{},
			counts: &r.counts[q], late: &r.late[q]})
	}
	last := int64(math.MinInt64)
	for _, e := range entries {
		last = max(last, e.now) // the FSM's batch time never goes back
		r.entry(last, e.clicks)
	}
	return r.counts, r.late
}

func (r *refPipeline) entry(now int64, clicks []refClick) {
	for _, c := range clicks {
		q := partition.PartitionOf([]byte(c.user), r.parts)
		r.clicks[q] = append(r.clicks[q], builtin.Click{User: c.user, Page: c.page, Time: c.t})
	}
	nowMs := now / 1e6
	budget := min(partition.MaxProcessorBudget, r.budget+r.perAppend*len(clicks))
	for q := range r.parts {
		for n := 0; n < budget && r.posIn[q] < len(r.clicks[q]); n++ {
			c := refStamped{r.clicks[q][r.posIn[q]], r.exchange}
			r.posIn[q]++
			src := &r.sources[q]
			if !src.seen {
				src.seen, src.mark, src.last = true, c.c.Time-r.cfg.ooo, nowMs
			}
			src.mark, src.last = max(src.mark, c.c.Time-r.cfg.ooo), max(src.last, nowMs)
			if partition.PartitionOf([]byte(c.c.Page), r.parts) == q {
				r.byPage[q] = append(r.byPage[q], c)
			} else {
				r.outbox[q] = append(r.outbox[q], c)
			}
		}
		for n := 0; n < budget && r.posBy[q] < len(r.byPage[q]); n++ {
			r.ops[q].process(r.byPage[q][r.posBy[q]])
			r.posBy[q]++
		}
		if r.posBy[q] == len(r.byPage[q]) { // the tick: caught up, so to the exchange watermark
			r.ops[q].raise(r.exchange)
		}
	}
	for q := range r.parts {
		for _, c := range r.outbox[q] {
			t := partition.PartitionOf([]byte(c.c.Page), r.parts)
			r.byPage[t] = append(r.byPage[t], c)
		}
		r.outbox[q] = nil
	}
	r.combine(nowMs)
}

// combine computes the exchange watermark at the end of an entry at batch time now.
func (r *refPipeline) combine(now int64) {
	any := false
	for _, s := range r.sources {
		any = any || s.seen
	}
	if !any {
		return
	}
	if !r.started {
		r.started, r.start = true, now
	}
	active, least, most := false, int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range r.sources {
		mark, last := int64(math.MinInt64), r.start
		if s.seen {
			mark, last = s.mark, s.last
		}
		most = max(most, mark)
		if r.cfg.idle > 0 && now-last >= r.cfg.idle {
			continue
		}
		active, least = true, min(least, mark)
	}
	next := most
	if active {
		next = least
	}
	r.exchange = max(r.exchange, next)
}

func (o *refOperator) raise(w int64) {
	o.mark = max(o.mark, w)
	o.closeUpTo()
}

func (o *refOperator) process(sc refStamped) {
	c := sc.c
	o.raise(sc.stamp)
	start := c.Time - c.Time%o.cfg.size // event times are positive
	k := refWinKey{c.Page, start}
	switch w := o.windows[k]; {
	case start+o.cfg.size+o.cfg.lateness <= o.mark:
		v, _ := msgpack.Marshal(&c)
		*o.late = append(*o.late, refRecord{[]byte(c.Page), v, c.Time})
	case w == nil:
		o.windows[k] = &refWindow{end: start + o.cfg.size, count: 1}
	default:
		w.count++
		if w.emitted > 0 {
			o.emit(k, w, false)
			w.emitted++
		}
	}
	o.closeUpTo()
}

// closeUpTo fires the unfired windows whose end the watermark has passed, by (end, page,
// start), then closes those past end + lateness, by (end + lateness, page, start).
func (o *refOperator) closeUpTo() {
	if o.mark == math.MinInt64 {
		return
	}
	for _, k := range o.due(func(w *refWindow) bool { return w.emitted == 0 && w.end <= o.mark }) {
		w := o.windows[k]
		final := w.end+o.cfg.lateness <= o.mark
		o.emit(k, w, final)
		w.emitted = 1
		if final {
			delete(o.windows, k)
		}
	}
	for _, k := range o.due(func(w *refWindow) bool { return w.end+o.cfg.lateness <= o.mark }) {
		o.emit(k, o.windows[k], true)
		delete(o.windows, k)
	}
}

func (o *refOperator) due(pred func(*refWindow) bool) []refWinKey {
	var ks []refWinKey
	for k, w := range o.windows {
		if pred(w) {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, func(a, b refWinKey) int {
		if c := cmp.Compare(o.windows[a].end, o.windows[b].end); c != 0 {
			return c // all windows have one size: the order by end + lateness is the same
		}
		if c := bytes.Compare([]byte(a.page), []byte(b.page)); c != 0 {
			return c
		}
		return cmp.Compare(a.start, b.start)
	})
	return ks
}

func (o *refOperator) emit(k refWinKey, w *refWindow, final bool) {
	v, _ := msgpack.Marshal(&builtin.PageCount{Page: k.page, Start: k.start, End: w.end, Count: w.count,
		Revision: w.emitted, Final: final})
	*o.counts = append(*o.counts, refRecord{[]byte(k.page), v, w.end})
}
