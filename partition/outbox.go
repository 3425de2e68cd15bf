package partition

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Emitting is how a procedure or processor writes a record to the partition its key
// belongs to, wherever it runs. A record of the Tx's own partition is appended at once
// (Tx.Append); one of another partition waits in the emitting partition's outbox until
// the end of the log entry, when Engine.RunProcessors delivers every outbox, in (source
// partition, emit order): Calvin's deterministic exchange. Outboxes are empty at the end
// of every entry, so they are never hashed or snapshotted.

// outRecord is a record waiting in an outbox.
type outRecord struct {
	stream string
	target int    // the partition of key
	rec    []byte // the key and then the value
	klen   int
	time   int64
}

// Emit writes a record with copies of key and value to the named stream on the partition
// that owns key: appended here if that is this Tx's partition, otherwise delivered at the
// end of the log entry (an undone Tx emits nothing). eventTimeMs 0 means the batch time.
// It fails like Append: ErrEmptyKey, ErrKeyTooLarge, ErrValueTooLarge, ErrBadName,
// ErrUnknownStream (only for this partition's stream: a missing stream elsewhere is found
// at delivery, which counts the record in SysUndelivered), and for a processor
// ErrUndeclaredStream.
func (tx *Tx) Emit(streamName string, key, value []byte, eventTimeMs int64) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("stream %s: record key of %d bytes: %w", streamName, len(key), err)
	}
	target := tx.PartitionOf(key)
	if target == tx.part.id {
		_, err := tx.Append(streamName, key, value, eventTimeMs)
		return err
	}
	if err := tx.checkStreamWrite(streamName); err != nil {
		return err
	}
	if err := checkValue(value); err != nil {
		return fmt.Errorf("stream %s: record of %d bytes: %w", streamName, len(value), err)
	}
	if eventTimeMs == 0 {
		eventTimeMs = tx.run.in.Time / 1e6
	}
	p := tx.part
	tx.run.undo = append(tx.run.undo, undoEntry{part: p, outbox: true, length: len(p.outbox)})
	var rec []byte
	if local := p.streams[streamName]; local != nil {
		rec = local.copyRecord(key, value) // from this partition's slab of the stream
	} else {
		rec = copyRecord(key, value)
	}
	p.outbox = append(p.outbox, outRecord{stream: streamName, target: target, rec: rec, klen: len(key), time: eventTimeMs})
	return nil
}

// checkStreamWrite checks that the Tx may append to the named stream: live, writable,
// a valid name, and for a processor one it declared.
func (tx *Tx) checkStreamWrite(streamName string) error {
	if err := tx.checkWritable(); err != nil {
		return err
	}
	if err := checkName(streamName); err != nil {
		return fmt.Errorf("stream %q: %w", streamName, err)
	}
	if d := tx.run.proc; d != nil && !slices.Contains(d.Emits, streamName) {
		return fmt.Errorf("processor %s: stream %s: %w", d.Name, streamName, ErrUndeclaredStream)
	}
	return nil
}

// truncateOutbox drops the records at index n and after: the undo of Emit.
func (p *Partition) truncateOutbox(n int) {
	clear(p.outbox[n:])
	p.outbox = p.outbox[:n]
}

// deliver moves every outbox's records to their partitions' streams, in (source
// partition, emit order), and settles (compaction, retention) the streams it appended to
// by the batch time nowNs. A record whose stream does not exist on its partition is
// counted there in SysUndelivered and dropped. Call it between phases, on the goroutine
// that calls Execute.
func (e *Engine) deliver(nowNs int64, st *ProcessStats) {
	any := false
	for _, p := range e.parts {
		if len(p.outbox) > 0 {
			any = true
			break
		}
	}
	if !any {
		return
	}
	for _, p := range e.parts {
		p.mu.Lock()
	}
	for _, src := range e.parts {
		for k := range src.outbox {
			r := &src.outbox[k]
			dst := e.parts[r.target]
			s := dst.streams[r.stream]
			if s == nil {
				dst.countUndelivered(r.stream)
				st.Undelivered++
				continue
			}
			if !s.pending {
				s.pending, s.settleFrom = true, s.log.len()
				e.settle = append(e.settle, s)
			}
			s.append(r.rec, r.klen, r.time)
			st.Delivered++
		}
		src.truncateOutbox(0)
	}
	for _, s := range e.settle {
		s.settle(nowNs / 1e6)
		s.pending = false
	}
	clear(e.settle)
	e.settle = e.settle[:0]
	for _, p := range e.parts {
		p.mu.Unlock()
	}
}

func (p *Partition) countUndelivered(stream string) {
	t := p.tableFor(SysUndelivered, true)
	var n uint64
	if v, ok := t.lookup([]byte(stream)); ok && len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	t.put([]byte(stream), binary.BigEndian.AppendUint64(nil, n+1))
}

// checkOutboxesEmpty asserts the invariant that makes outboxes stateless: they are empty
// at the end of every log entry, so snapshots and hashes need not cover them.
func (e *Engine) checkOutboxesEmpty(where string) {
	for _, p := range e.parts {
		if len(p.outbox) > 0 {
			panic(fmt.Sprintf("partition: %s with %d undelivered records in partition %d's outbox (invariant: outboxes are empty at every entry end; call RunProcessors after each entry's inputs)",
				where, len(p.outbox), p.id))
		}
	}
}
