package partition

// Failed OnTick calls. A tick has no record to send to the dead-letter stream, so its
// failure is recorded like this, on the partition, in the processor phase, identically on
// every replica: the processor's row of SysProcessors counts it (ProcessorStatus.TickErrors)
// and keeps a hash of its error text, and when that text differs from the last failed
// tick's (or the last tick succeeded) a DeadLetter with Tick set and the error is appended
// to the processor's dead-letter stream. A hook that fails the same way in every phase —
// a window whose output stream was deleted — so costs one dead letter and a count that
// grows, not a dead letter per phase. While the processor's input stream does not exist
// it has no row and no dead-letter stream: a failed tick is then only counted in
// ProcessStats.

// recordTick records the outcome of d's OnTick on p (err nil: it succeeded); the caller
// holds p.mu, in the processor phase, after d's records.
func (e *Engine) recordTick(p *Partition, d *procDef, err error, nowNs int64) {
	s := p.streams[d.dead]
	if p.streams[d.Input] == nil || s == nil {
		return // waiting for its stream: no row, no dead-letter stream
	}
	ps, _ := p.loadProcState(d.key)
	if err == nil {
		if ps.tickErr != 0 {
			ps.tickErr = 0
			p.storeProcState(d.key, ps)
		}
		return
	}
	text := deadLetterText(err)
	h := namespaceHash('t', text) | 1 // never 0: 0 means the last tick succeeded
	ps.ticks++
	if h != ps.tickErr {
		ps.tickErr = h
		timeMs := nowNs / 1e6
		appendDeadLetter(s, &DeadLetter{Processor: d.Name, Offset: ps.next, Key: d.key, EventTime: timeMs,
			Error: text, Tick: true}, nowNs)
	}
	p.storeProcState(d.key, ps)
}
