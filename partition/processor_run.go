package partition

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// DeadLetter is the value of a record in a dead-letter stream (Input+DeadLetterSuffix),
// msgpack-encoded: the failed record and why it failed. Its key is the record's key and
// its event time the record's.
type DeadLetter struct {
	Processor string `msgpack:"p"`
	Offset    uint64 `msgpack:"o"`
	Key       []byte `msgpack:"k"`
	// Value is the record's value; nil if the dead letter would otherwise be longer than
	// MaxValueBytes.
	Value     []byte `msgpack:"v"`
	EventTime int64  `msgpack:"t"`
	Error     string `msgpack:"e"`
	// Tick marks a failed OnTick call rather than a record: Offset is then the
	// processor's position, Key its name, Value nil and EventTime the batch time.
	Tick bool `msgpack:"tick,omitempty"`
}

// maxDeadLetterError bounds the error text kept in a dead letter, in bytes.
const maxDeadLetterError = 4096

// RunProcessors runs the processor phase of one log entry; call it after the entry's
// inputs (Execute), from the goroutine that calls Execute, on every replica at the same
// log positions. It does, in this order:
//
//  1. create the missing declared output streams of processors whose input exists
//     (Processor.Outputs), then Input+DeadLetterSuffix, unbounded, on every partition for
//     each processor whose input stream exists and whose dead-letter stream does not;
//  2. on each partition (in parallel across partitions, or one after another when
//     Sequential: the result is the same), run each processor in name order over at most
//     ph.Budget (scaled by ph.BudgetPerAppend) of its pending records in offset order,
//     each record in its own Tx (see Processor.Process), then each OnTick hook in name
//     order;
//  3. deliver every outbox (see Tx.Emit);
//  4. combine the exchange watermarks (see SysWatermarks).
//
// A record's effects commit with the processor's new position: the position is written
// to SysProcessors at the end of the partition's share of the phase, while the worker
// still holds the partition, so no reader, hash or snapshot sees one without the other.
func (e *Engine) RunProcessors(ph ProcessorPhase) ProcessStats {
	var st ProcessStats
	if ph.Budget <= 0 {
		ph.Budget = DefaultProcessorBudget
	}
	appended := 0
	for _, p := range e.parts {
		appended += p.appended
		p.appended = 0
	}
	if ph.BudgetPerAppend > 0 && appended > 0 {
		extra := MaxProcessorBudget
		if appended <= MaxProcessorBudget/ph.BudgetPerAppend {
			extra = appended * ph.BudgetPerAppend
		}
		ph.Budget = max(ph.Budget, min(MaxProcessorBudget, ph.Budget+extra))
	}
	st.Budget = ph.Budget
	if len(e.procs) > 0 {
		e.ensureOutputStreams()
		e.ensureDeadLetterStreams()
		e.procPhase = ph // not &ph: that would allocate on every entry
		if e.workers == nil {
			for _, p := range e.parts {
				p.mu.Lock()
				e.runProcessorsOn(&e.main, p, &e.procPhase)
				p.mu.Unlock()
			}
		} else {
			for _, w := range e.workers {
				e.phase.Add(1)
				w.jobs <- job{procs: &e.procPhase}
			}
			e.phase.Wait()
		}
		for i := range e.procStats {
			st.add(&e.procStats[i])
		}
	}
	e.deliver(ph.Time, &st)
	e.combineWatermarks(ph.Time)
	e.checkOutboxesEmpty("end of processor phase")
	st.Pending = e.updatePending()
	return st
}

// ProcessorsPending reports whether, after the last processor phase (or Restore), some
// processor had records left to handle. Safe for concurrent use.
func (e *Engine) ProcessorsPending() bool { return e.pending.Load() }

// HasTickHooks reports whether, after the last processor phase (or Restore), a processor
// with an OnTick hook had its input stream: it waits for time to pass. A hook whose
// processor waits for its stream still runs in every phase, but needs no ticks: its
// processor has seen no record. Safe for concurrent use.
func (e *Engine) HasTickHooks() bool { return e.ticking.Load() }

// ensureDeadLetterStreams creates the missing dead-letter streams of processors whose
// input exists, on every partition at once (streams are defined everywhere or nowhere).
func (e *Engine) ensureDeadLetterStreams() {
	for i := range e.procs {
		d := &e.procs[i]
		exists := false
		for _, p := range e.parts {
			exists = exists || p.streams[d.Input] != nil
		}
		if !exists {
			continue
		}
		for _, p := range e.parts {
			if p.streams[d.dead] == nil {
				p.mu.Lock()
				p.streams[d.dead] = newStream(d.dead, StreamConfig{})
				p.mu.Unlock()
			}
		}
	}
}

// runProcessorsOn is one partition's share of a processor phase; the caller holds p.mu.
func (e *Engine) runProcessorsOn(l *lane, p *Partition, ph *ProcessorPhase) {
	st := &e.procStats[p.id]
	*st = ProcessStats{}
	for i := range e.procs {
		d := &e.procs[i]
		s := p.streams[d.Input]
		if s == nil {
			continue // waiting for its stream
		}
		ps, known := p.loadProcState(d.key)
		old := ps
		switch {
		case !known && d.StartLatest:
			ps.next = s.next
		case !known:
			ps.next = s.first
		case ps.next > s.next:
			// Unreachable since DeleteStream resets the positions of the stream's
			// processors (a state from before that rule): start over, skip nothing.
			ps.next = s.first
		}
		if ps.next < s.first {
			st.Skipped += int(s.first - ps.next)
			ps.skipped += s.first - ps.next
			ps.next = s.first
		}
		k, n := s.find(ps.next), 0
		for k < s.log.len() && n < ph.Budget {
			en := s.log.at(k)
			k++
			if en.dead {
				continue // compacted away
			}
			n++
			rec := Record{Offset: en.off, Key: en.key(), Value: en.value(), EventTime: en.time}
			if err := l.step(d, p, ph, &rec); err != nil {
				e.deadLetter(p, d, &rec, err, ph.Time)
				ps.dead++
				st.DeadLetters++
			}
			ps.next = rec.Offset + 1
		}
		if k == s.log.len() {
			ps.next = s.next // past trailing compaction gaps
		}
		st.Processed += n
		if !known || ps != old {
			p.storeProcState(d.key, ps)
		}
	}
	for i := range e.procs {
		d := &e.procs[i]
		if d.OnTick == nil {
			continue
		}
		err := l.step(d, p, ph, nil)
		if err != nil {
			st.TickErrors++
			if st.TickError == nil {
				st.TickError = fmt.Errorf("processor %s, partition %d: tick: %w", d.Name, p.id, err)
			}
		}
		e.recordTick(p, d, err, ph.Time)
	}
}

// step runs d.Process for rec, or d.OnTick when rec is nil, in a Tx of its own on
// partition p, commits it or undoes it, and returns the error (a panic becomes a
// *PanicError).
func (l *lane) step(d *procDef, p *Partition, ph *ProcessorPhase, rec *Record) error {
	l.pin = Input{Procedure: d.Name, Partition: p.id, Time: ph.Time, Seq: d.tickSeed(ph.Seq, p.id)}
	if rec != nil {
		l.pin.Key, l.pin.Seq = rec.Key, d.recordSeed(p.id, rec.Offset)
	}
	l.parts[0] = p
	l.run.reset(&l.pin, l.parts[:])
	l.run.proc = d
	err := callStep(&l.run.views[0], d, rec)
	l.run.done = true
	if err != nil {
		l.run.rollback()
	} else {
		l.run.commit()
	}
	l.run.proc = nil
	l.pin = Input{}
	return err
}

func callStep(tx *Tx, d *procDef, rec *Record) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: panicText(r)}
		}
	}()
	if rec == nil {
		return d.OnTick(tx)
	}
	return d.Process(tx, *rec)
}

// deadLetter appends the failed record to d's dead-letter stream of p.
func (e *Engine) deadLetter(p *Partition, d *procDef, rec *Record, cause error, nowNs int64) {
	s := p.streams[d.dead]
	if s == nil {
		panic(fmt.Sprintf("partition: dead-letter stream %s missing on partition %d (invariant: created at the start of the phase, and processors cannot delete streams)", d.dead, p.id))
	}
	dl := DeadLetter{Processor: d.Name, Offset: rec.Offset, Key: rec.Key, Value: rec.Value, EventTime: rec.EventTime,
		Error: deadLetterText(cause)}
	appendDeadLetter(s, &dl, nowNs)
}

// deadLetterText is the error text a dead letter keeps: cause's, at most
// maxDeadLetterError bytes.
func deadLetterText(cause error) string {
	msg := cause.Error()
	if len(msg) > maxDeadLetterError {
		msg = msg[:maxDeadLetterError]
	}
	return msg
}

// appendDeadLetter appends dl to the dead-letter stream s, without its Value if it would
// otherwise be longer than MaxValueBytes.
func appendDeadLetter(s *stream, dl *DeadLetter, nowNs int64) {
	v, err := msgpack.Marshal(dl)
	if err == nil && len(v) > MaxValueBytes {
		dl.Value = nil
		v, err = msgpack.Marshal(dl)
	}
	if err != nil {
		panic(fmt.Sprintf("partition: encode dead letter: %v", err))
	}
	s.settleFrom = s.log.len()
	s.append(copyRecord(dl.Key, v), len(dl.Key), dl.EventTime)
	s.settle(nowNs / 1e6)
}

// updatePending recomputes ProcessorsPending and HasTickHooks from the partitions; call
// it between phases, from the goroutine that calls Execute.
func (e *Engine) updatePending() bool {
	pending, ticking := false, false
	for _, p := range e.parts {
		for i := range e.procs {
			d := &e.procs[i]
			s := p.streams[d.Input]
			if s == nil {
				continue
			}
			ticking = ticking || d.OnTick != nil
			ps, ok := p.loadProcState(d.key)
			if !ok || ps.next < s.next {
				pending = true
			}
		}
	}
	e.pending.Store(pending)
	e.ticking.Store(ticking)
	return pending
}

// ProcessorStatus returns every processor's state on every partition, by processor
// name, then partition.
func (e *Engine) ProcessorStatus() []ProcessorStatus {
	e.procsMu.RLock()
	defer e.procsMu.RUnlock()
	out := make([]ProcessorStatus, 0, len(e.procs)*len(e.parts))
	for i := range e.procs {
		d := &e.procs[i]
		for _, p := range e.parts {
			p.mu.RLock()
			st := ProcessorStatus{Processor: d.Name, Partition: p.id}
			s := p.streams[d.Input]
			ps, ok := p.loadProcState(d.key)
			if s == nil || !ok {
				st.Waiting = true
			} else {
				st.Position, st.NextOffset, st.DeadLetters, st.Skipped = ps.next, s.next, ps.dead, ps.skipped
				st.TickErrors, st.TickFailing = ps.ticks, ps.tickErr != 0
				if s.next > ps.next {
					st.Lag = s.next - ps.next
				}
			}
			p.mu.RUnlock()
			out = append(out, st)
		}
	}
	return out
}
