package partition

import (
	"bytes"
	"fmt"
)

// Stream operations of a Tx. A stream exists in a partition from the input that creates
// it there (CreateStream) to the one that deletes it; the procedure layer's stream.create
// and stream.delete do both on every partition at one log position, so a stream is
// defined everywhere or nowhere. Appends run in log order, so offsets are identical on
// every replica. Compaction and retention run when the appending input commits
// (StreamConfig), so a failed input has nothing of them to undo.

// CreateStream defines the stream name in this partition with cfg. It fails with
// ErrBadName, ErrBadRetention or ErrStreamExists.
func (tx *Tx) CreateStream(name string, cfg StreamConfig) error {
	if err := tx.checkDefinitionChange(name); err != nil {
		return err
	}
	if err := checkName(name); err != nil {
		return fmt.Errorf("stream %q: %w", name, err)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("stream %s: %w", name, err)
	}
	if tx.part.streams[name] != nil {
		return fmt.Errorf("stream %s: %w", name, ErrStreamExists)
	}
	s := newStream(name, cfg)
	tx.part.streams[name] = s
	tx.run.undo = append(tx.run.undo, undoEntry{part: tx.part, stream: s, created: true})
	return nil
}

// DeleteStream removes the stream name and its records from this partition. It fails
// with ErrUnknownStream if there is none. It also resets, in the same step, the position
// of every processor bound to the stream on this partition to offset 0 (keeping its
// dead-letter and skipped counts): a stream created again under the name is a new log
// whose records the processor has not handled, whatever offsets the old one reached.
func (tx *Tx) DeleteStream(name string) error {
	if err := tx.checkDefinitionChange(name); err != nil {
		return err
	}
	s := tx.part.streams[name]
	if s == nil {
		return fmt.Errorf("stream %q: %w", name, ErrUnknownStream)
	}
	delete(tx.part.streams, name)
	tx.run.undo = append(tx.run.undo, undoEntry{part: tx.part, stream: s, deleted: true})
	tx.resetProcessorPositions(name)
	tx.dropWatermarks(name)
	return nil
}

// dropWatermarks removes, undoably, the exchange watermark rows of the stream name on this
// partition (what each upstream published and the combined value): a stream created again
// under the name is a new log whose records are judged from no watermark, not against
// the old stream's high one.
func (tx *Tx) dropWatermarks(name string) {
	t := tx.part.tables[SysWatermarks]
	if t == nil {
		return
	}
	keys := [][]byte{combinedKey(name)}
	prefix := publishedKey(name, "")
	t.scan(ScanOptions{Start: prefix}, func(k, _ []byte) bool {
		if !bytes.HasPrefix(k, prefix) {
			return false
		}
		keys = append(keys, bytes.Clone(k))
		return true
	})
	for _, k := range keys {
		if stored, old, existed := t.delete(k); existed {
			tx.run.undo = append(tx.run.undo, undoEntry{part: tx.part, table: t, key: stored, old: old, existed: true})
		}
	}
}

// resetProcessorPositions sets the position of every processor whose input is the stream
// name back to 0 on this partition, undoably. A processor with no row yet keeps none: it
// starts by its own rule (Processor.StartLatest) when it first sees the stream.
func (tx *Tx) resetProcessorPositions(name string) {
	t := tx.part.tables[SysProcessors]
	if t == nil {
		return
	}
	for i := range tx.run.eng.procs {
		d := &tx.run.eng.procs[i]
		if d.Input != name {
			continue
		}
		ps, ok := tx.part.loadProcState(d.key)
		if !ok || ps.next == 0 {
			continue
		}
		ps.next = 0
		k, old, existed := t.put(d.key, ps.encode())
		tx.run.undo = append(tx.run.undo, undoEntry{part: tx.part, table: t, key: k, old: old, existed: existed})
	}
}

// Append adds a record with copies of key and value to the stream of this partition and
// returns its offset. eventTimeMs is the record's event time in Unix milliseconds; 0 means
// the input's batch time. It fails with ErrUnknownStream for a stream not created here,
// with ErrEmptyKey, ErrKeyTooLarge or ErrValueTooLarge, and in a processor with
// ErrUndeclaredStream for a stream it did not declare.
func (tx *Tx) Append(streamName string, key, value []byte, eventTimeMs int64) (uint64, error) {
	if err := tx.checkStreamWrite(streamName); err != nil {
		return 0, err
	}
	if err := checkKey(key); err != nil {
		return 0, fmt.Errorf("stream %s: record key of %d bytes: %w", streamName, len(key), err)
	}
	if err := checkValue(value); err != nil {
		return 0, fmt.Errorf("stream %s: record of %d bytes: %w", streamName, len(value), err)
	}
	s := tx.part.streams[streamName]
	if s == nil {
		return 0, fmt.Errorf("stream %s: %w", streamName, ErrUnknownStream)
	}
	if eventTimeMs == 0 {
		eventTimeMs = tx.run.in.Time / 1e6
	}
	return tx.appendOwned(s, s.copyRecord(key, value), len(key), eventTimeMs), nil
}

// copyRecord returns a copy of key followed by value, in one allocation of their size.
func copyRecord(key, value []byte) []byte {
	data := make([]byte, len(key)+len(value))
	copy(data, key)
	copy(data[len(key):], value)
	return data
}

// appendOwned appends a record whose bytes the Tx owns (rec: its key of klen bytes, then
// its value) to s, a stream of the Tx's partition, undone if the Tx fails and settled
// when it commits.
func (tx *Tx) appendOwned(s *stream, rec []byte, klen int, eventTimeMs int64) uint64 {
	if !s.pending {
		s.pending, s.settleFrom = true, s.log.len()
		tx.run.settle = append(tx.run.settle, s)
	}
	tx.run.undo = append(tx.run.undo, undoEntry{part: tx.part, stream: s, length: s.log.len()})
	return s.append(rec, klen, eventTimeMs)
}

// checkDefinitionChange refuses a stream definition change where the Tx may not make one:
// a finished or read-only Tx, or a processor's (streams are defined on all partitions by
// inputs; a processor runs on one).
func (tx *Tx) checkDefinitionChange(name string) error {
	if err := tx.checkWritable(); err != nil {
		return err
	}
	if d := tx.run.proc; d != nil {
		return fmt.Errorf("processor %s: create or delete stream %s: %w", d.Name, name, ErrUndeclaredStream)
	}
	return nil
}

// StreamLen returns the next offset of the named stream of this partition (the number of
// offsets it has assigned, including the input's own appends), 0 if there is no such
// stream.
func (tx *Tx) StreamLen(streamName string) uint64 {
	if s := tx.part.streams[streamName]; s != nil {
		return s.next
	}
	return 0
}

// StreamInfo describes the named stream of this partition, as of the input's own
// changes: compaction and retention of its appends have not run yet.
func (tx *Tx) StreamInfo(name string) (StreamInfo, bool) {
	if s := tx.part.streams[name]; s != nil {
		return s.info(), true
	}
	return StreamInfo{}, false
}

// Streams returns the names of this partition's streams in ascending order.
func (tx *Tx) Streams() []string { return sortedKeys(tx.part.streams) }
