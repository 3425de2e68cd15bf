package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Exchange watermarks carry event-time progress through the cross-partition exchange
// (DESIGN.md section 5, "Time"; docs/streams.md, "Watermarks across the exchange").
//
// A processor that emits to a stream publishes, on its partition, that partition's
// watermark for the stream (Tx.AdvanceWatermark): the event time below which it emits
// nothing more on time, and the batch time it last saw a record. At the end of every
// processor phase, after the exchange, the engine combines the watermarks that every
// partition published for the stream into the stream's exchange watermark and stores it
// on every partition (Tx.ExchangeWatermark reads it there):
//
//  1. an upstream (a publishing processor on one partition) is idle when IdleTimeout of
//     batch time has passed since its last record (since the stream's first published
//     watermark, for one that has published nothing yet); IdleTimeout 0 never idles;
//  2. the combined value is the minimum over the upstreams that are not idle (one that
//     has published nothing counts as NoWatermark: it holds the stream back);
//  3. when every upstream is idle it is the maximum of their watermarks — never batch
//     time, so a backfill of old data is not made late by a pause;
//  4. it never goes backwards.
//
// Every value comes from the log (event times of records, batch times of entries), and
// all of it is rows of the table SysWatermarks, so it is hashed, snapshotted and replayed
// with the rest of the partition. Because the combined value is the same on every
// partition, whether a record is late for it cannot depend on which partition its key
// hashes to.

// SysWatermarks is the table of exchange watermarks: rows "o" stream 0 processor (what a
// processor published on this partition: watermark, last batch time, idle timeout) and
// "i" stream (the combined watermark and the batch time of the first publication).
const SysWatermarks = "sys.watermarks"

// NoWatermark is the watermark of a stream nothing has been published for: every event
// time is ahead of it.
const NoWatermark = math.MinInt64

// ErrNotProcessor is returned by a Tx operation that only a processor's Tx may call.
var ErrNotProcessor = errors.New("partition: not a processor's transaction")

// published is an "o" row: one upstream's watermark for a stream.
type published struct {
	mark, last, idle int64 // Unix ms, Unix ms (batch time), ms
}

func (w published) encode() []byte {
	b := make([]byte, 0, 24)
	b = binary.BigEndian.AppendUint64(b, uint64(w.mark))
	b = binary.BigEndian.AppendUint64(b, uint64(w.last))
	return binary.BigEndian.AppendUint64(b, uint64(w.idle))
}

// combined is an "i" row: a stream's exchange watermark.
type combined struct {
	mark, start int64 // Unix ms; batch time of the first publication, Unix ms
}

func (w combined) encode() []byte {
	b := make([]byte, 0, 16)
	b = binary.BigEndian.AppendUint64(b, uint64(w.mark))
	return binary.BigEndian.AppendUint64(b, uint64(w.start))
}

func int64At(b []byte, i int) int64 { return int64(binary.BigEndian.Uint64(b[8*i:])) }

func publishedKey(stream, proc string) []byte {
	k := make([]byte, 0, 2+len(stream)+len(proc))
	return append(append(append(append(k, 'o'), stream...), 0), proc...)
}

func combinedKey(stream string) []byte {
	return append(append(make([]byte, 0, 1+len(stream)), 'i'), stream...)
}

// AdvanceWatermark publishes, for the running processor on this partition, that its
// output to stream will hold no more records before event time markMs (Unix ms) that
// are on time, and that it saw a record at the batch time: the watermark becomes the
// maximum of markMs and the one published before. idleTimeoutMs (≥ 0) is how long
// without a record, in batch time, makes this partition idle (see SysWatermarks' rules);
// 0 never. It is undone with the Tx, and fails with ErrNotProcessor outside a processor,
// ErrUndeclaredStream for a stream the processor does not emit to.
func (tx *Tx) AdvanceWatermark(stream string, markMs, idleTimeoutMs int64) error {
	d := tx.run.proc
	if d == nil {
		return fmt.Errorf("watermark of %s: %w", stream, ErrNotProcessor)
	}
	if err := tx.checkStreamWrite(stream); err != nil {
		return err
	}
	if idleTimeoutMs < 0 {
		return fmt.Errorf("watermark of %s: idle timeout %d ms: %w", stream, idleTimeoutMs, ErrBadProcessor)
	}
	p := tx.part
	t := p.tables[SysWatermarks]
	if t == nil {
		t = p.tableFor(SysWatermarks, true)
		tx.run.undo = append(tx.run.undo, undoEntry{part: p, table: t, created: true})
	}
	key := publishedKey(stream, d.Name)
	next := published{mark: markMs, last: tx.run.in.Time / 1e6, idle: idleTimeoutMs}
	if v, ok := t.lookup(key); ok {
		prev := published{int64At(v, 0), int64At(v, 1), int64At(v, 2)}
		next.mark, next.last = max(next.mark, prev.mark), max(next.last, prev.last)
		if next == prev {
			return nil
		}
	}
	k, old, existed := t.put(key, next.encode())
	tx.run.undo = append(tx.run.undo, undoEntry{part: p, table: t, key: k, old: old, existed: existed})
	return nil
}

// ExchangeWatermark returns stream's exchange watermark as of the end of the previous
// processor phase (the same on every partition), NoWatermark before the first.
func (tx *Tx) ExchangeWatermark(stream string) int64 {
	if t := tx.part.tables[SysWatermarks]; t != nil {
		if v, ok := t.lookup(combinedKey(stream)); ok {
			return int64At(v, 0)
		}
	}
	return NoWatermark
}

// InputCaughtUp reports whether the running processor has handled every record of its
// input stream on this partition. It is exact in an OnTick hook (positions are stored
// before the hooks run); false outside a processor.
func (tx *Tx) InputCaughtUp() bool {
	d := tx.run.proc
	if d == nil {
		return false
	}
	s := tx.part.streams[d.Input]
	ps, ok := tx.part.loadProcState(d.key)
	return s != nil && ok && ps.next >= s.next
}

// combineWatermarks computes every stream's exchange watermark from what the partitions
// published and stores it on every partition; nowNs is the entry's batch time. Call it
// between phases, on the goroutine that calls Execute.
func (e *Engine) combineWatermarks(nowNs int64) {
	var ups []upstream
	for _, p := range e.parts {
		t := p.tables[SysWatermarks]
		if t == nil {
			continue
		}
		t.scan(ScanOptions{Start: []byte{'o'}, End: []byte{'o' + 1}}, func(k, _ []byte) bool {
			i := slices.Index(k, 0)
			u := upstream{string(k[1:i]), string(k[i+1:])}
			if !slices.Contains(ups, u) {
				ups = append(ups, u)
			}
			return true
		})
	}
	if len(ups) == 0 {
		return
	}
	slices.SortFunc(ups, func(a, b upstream) int {
		if a.stream != b.stream {
			return strings.Compare(a.stream, b.stream)
		}
		return strings.Compare(a.proc, b.proc)
	})
	now := nowNs / 1e6
	for i := 0; i < len(ups); {
		j := i
		for j < len(ups) && ups[j].stream == ups[i].stream {
			j++
		}
		e.combineStream(ups[i].stream, ups[i:j], now)
		i = j
	}
}

// combineStream applies the rules of SysWatermarks to one stream whose publishing
// processors are ups.
func (e *Engine) combineStream(stream string, ups []upstream, now int64) {
	ck := combinedKey(stream)
	cur := combined{mark: NoWatermark, start: now}
	had := false
	if t := e.parts[0].tables[SysWatermarks]; t != nil {
		if v, ok := t.lookup(ck); ok {
			cur, had = combined{int64At(v, 0), int64At(v, 1)}, true
		}
	}
	anyActive, least, most := false, int64(math.MaxInt64), int64(NoWatermark)
	for _, u := range ups {
		key := publishedKey(stream, u.proc)
		rows := make([]*published, len(e.parts))
		var idle int64
		for q, p := range e.parts {
			if t := p.tables[SysWatermarks]; t != nil {
				if v, ok := t.lookup(key); ok {
					rows[q] = &published{int64At(v, 0), int64At(v, 1), int64At(v, 2)}
					idle = max(idle, rows[q].idle)
				}
			}
		}
		for _, w := range rows {
			mark, last := int64(NoWatermark), cur.start
			if w != nil {
				mark, last = w.mark, w.last
			}
			most = max(most, mark)
			if idle > 0 && now-last >= idle {
				continue
			}
			anyActive, least = true, min(least, mark)
		}
	}
	next := most
	if anyActive {
		next = least
	}
	next = max(next, cur.mark)
	if had && next == cur.mark {
		return
	}
	for _, p := range e.parts {
		p.mu.Lock()
		p.tableFor(SysWatermarks, true).put(ck, combined{mark: next, start: cur.start}.encode())
		p.mu.Unlock()
	}
}

// upstream names the watermark one processor publishes for one stream.
type upstream struct{ stream, proc string }
