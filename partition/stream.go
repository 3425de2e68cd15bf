package partition

import (
	"fmt"
	"sort"
)

// StreamConfig is a stream's definition: its retention policy and whether it is
// key-compacted. Zero bounds are unbounded; negative bounds are refused (ErrBadRetention).
type StreamConfig struct {
	// MaxRecords is the most live records kept per partition; 0 keeps all.
	MaxRecords int64
	// MaxBytes is the most bytes (keys plus values of live records) kept per partition;
	// 0 keeps all. A record longer than MaxBytes is trimmed at the end of the input that
	// appended it (its offset is still assigned and returned).
	MaxBytes int64
	// MaxAgeMs trims records whose event time is more than MaxAgeMs milliseconds before
	// the batch time of an input that appends to the stream; 0 keeps all. Only the front
	// of the log is trimmed: a young record holds the older ones behind it, and an idle
	// stream is trimmed at its next append.
	MaxAgeMs int64
	// Compact keeps only the latest record of each key; the others leave gaps in the
	// offsets that readers skip.
	Compact bool
}

// Validate reports a bound that cannot be met, wrapped around ErrBadRetention.
func (c StreamConfig) Validate() error {
	if c.MaxRecords < 0 || c.MaxBytes < 0 || c.MaxAgeMs < 0 {
		return fmt.Errorf("%w: max records %d, max bytes %d, max age %d ms: bounds must be ≥ 0 (0: unbounded)",
			ErrBadRetention, c.MaxRecords, c.MaxBytes, c.MaxAgeMs)
	}
	return nil
}

// Record is one stream record.
type Record struct {
	// Offset is the record's position in its stream partition: dense from 0 in append
	// order and identical on every replica; compaction and retention leave gaps and a
	// higher first offset, never new numbers.
	Offset uint64
	// Key is the record's key (it chose the record's partition).
	Key []byte
	// Value is the record's payload.
	Value []byte
	// EventTime is the record's event time in Unix milliseconds.
	EventTime int64
}

// StreamInfo describes one stream partition.
type StreamInfo struct {
	// Config is the stream's definition.
	Config StreamConfig
	// FirstOffset is the lowest offset not trimmed by retention; reading below it fails
	// with ErrOffsetTrimmed.
	FirstOffset uint64
	// NextOffset is the offset the next append gets.
	NextOffset uint64
	// Records and Bytes count the live records (not trimmed, not compacted away) and
	// their keys' and values' bytes.
	Records, Bytes int64
}

// entry is one record of a stream log. Entries are immutable once they are in a log that a
// snapshot shares, except through stream.unshare (see stream.shared).
//
// rec holds the key and then the value in one slice, so that the collector follows one
// pointer per record, not two; klen is the key's length.
type entry struct {
	off  uint64
	time int64
	rec  []byte
	klen uint32
	dead bool // compacted away
}

// key returns the record's key, its capacity clipped so that appending cannot reach the value.
func (e *entry) key() []byte { return e.rec[:e.klen:e.klen] }

// value returns the record's value.
func (e *entry) value() []byte { return e.rec[e.klen:] }

func (e *entry) size() int64 { return int64(len(e.rec)) }

// stream is one partition's log of one stream. Live and dead entries are kept in offset
// order at indexes head and after of log; entries before head were trimmed: their
// chunks are dropped once head passes them, and the log is rebuilt (rebuild) when half of
// what is left is garbage.
type stream struct {
	name   string
	ns     uint64
	cfg    StreamConfig
	log    entryLog
	head   int
	first  uint64 // lowest offset not trimmed
	next   uint64 // offset of the next append
	live   int64
	bytes  int64
	dead   int               // dead entries at head and after
	index  map[string]uint64 // Compact: key → offset of its live record
	sum    uint64            // sum of the live records' hashes
	shared bool              // a Snapshot views the log: copy it before changing an entry in place

	pending    bool // appended to by the running input: settle at its commit
	settleFrom int  // index in log of the running input's first append

	slab slab // the bytes of the records appended here and emitted from here (see slab.go)
}

func newStream(name string, cfg StreamConfig) *stream {
	s := &stream{name: name, ns: namespaceHash(kindStream, name), cfg: cfg}
	if cfg.Compact {
		s.index = map[string]uint64{}
	}
	return s
}

// headerHash covers what is not in any record: the definition and the offset bounds.
func (s *stream) headerHash() uint64 {
	h := mix64(s.ns ^ 0x68656164) // "head"
	for _, v := range []uint64{s.first, s.next, uint64(s.cfg.MaxRecords), uint64(s.cfg.MaxBytes), uint64(s.cfg.MaxAgeMs)} {
		h = mix64(h + v)
	}
	if s.cfg.Compact {
		h = mix64(h + 1)
	}
	return h
}

// stateHash is the stream's share of its partition's hash.
func (s *stream) stateHash() uint64 { return s.sum + s.headerHash() }

// hash recomputes stateHash from every live record.
func (s *stream) hash() uint64 {
	var sum uint64
	for i := s.head; i < s.log.len(); i++ {
		if e := s.log.at(i); !e.dead {
			sum += recordHash(s.ns, e.off, e.key(), e.value(), e.time)
		}
	}
	return sum + s.headerHash()
}

func (s *stream) info() StreamInfo {
	return StreamInfo{Config: s.cfg, FirstOffset: s.first, NextOffset: s.next, Records: s.live, Bytes: s.bytes}
}

// append adds a record, rec its key of klen bytes and then its value (copied by the
// caller: copyRecord), and returns its offset. Compaction and retention wait for settle.
func (s *stream) append(rec []byte, klen int, time int64) uint64 {
	e := entry{off: s.next, time: time, rec: rec, klen: uint32(klen)}
	s.log.push(e)
	s.next++
	s.live++
	s.bytes += e.size()
	s.sum += recordHash(s.ns, e.off, e.key(), e.value(), time)
	return e.off
}

// truncate drops the entries at index n and after, newest first: it undoes the appends
// of a failed input, which settle has not touched.
func (s *stream) truncate(n int) {
	for i := s.log.len() - 1; i >= n; i-- {
		e := s.log.at(i)
		s.sum -= recordHash(s.ns, e.off, e.key(), e.value(), e.time)
		s.live--
		s.bytes -= e.size()
		s.next = e.off
	}
	s.log.truncate(n)
}

// settle applies compaction to the records the committed input appended and then
// retention by the input's batch time nowMs.
func (s *stream) settle(nowMs int64) {
	if s.cfg.Compact {
		from := s.settleFrom
		if s.shared {
			from -= s.head
			s.unshare()
		}
		for i := from; i < s.log.len(); i++ {
			e := s.log.at(i)
			if old, ok := s.index[string(e.key())]; ok {
				s.kill(old)
			}
			s.index[string(e.key())] = e.off
		}
	}
	s.trim(nowMs)
	s.skipDead()
	if k := s.head >> chunkShift; k > 0 {
		s.log.dropFront(k)
		s.head -= k << chunkShift
	}
	if n := s.log.len(); s.head >= 32 && (s.head >= n/2 || s.dead > n-s.head-s.dead) {
		s.rebuild()
	}
}

// kill marks the live record at offset off as compacted away.
func (s *stream) kill(off uint64) {
	i := s.find(off)
	if i == s.log.len() || s.log.at(i).off != off || s.log.at(i).dead {
		panic(fmt.Sprintf("partition: stream %s: compaction index names offset %d, which is not live (invariant: index holds live offsets only)", s.name, off))
	}
	e := s.log.at(i)
	s.sum -= recordHash(s.ns, e.off, e.key(), e.value(), e.time)
	s.live--
	s.bytes -= e.size()
	s.dead++
	e.dead, e.rec, e.klen = true, nil, 0
}

// trim removes live records from the front while a bound is exceeded.
func (s *stream) trim(nowMs int64) {
	c := s.cfg
	for s.live > 0 {
		s.skipDead()
		e := s.log.at(s.head)
		over := (c.MaxRecords > 0 && s.live > c.MaxRecords) || (c.MaxBytes > 0 && s.bytes > c.MaxBytes) ||
			(c.MaxAgeMs > 0 && e.time < nowMs-c.MaxAgeMs)
		if !over {
			return
		}
		s.sum -= recordHash(s.ns, e.off, e.key(), e.value(), e.time)
		s.live--
		s.bytes -= e.size()
		if s.index != nil {
			delete(s.index, string(e.key()))
		}
		s.first = e.off + 1
		s.head++ // the entry stays in the log (a snapshot may share it) until its chunk is dropped
	}
}

// skipDead moves head past compacted-away entries at the front.
func (s *stream) skipDead() {
	for s.head < s.log.len() && s.log.at(s.head).dead {
		s.head++
		s.dead--
	}
}

// rebuild copies the entries still needed into a new log, freeing trimmed and
// compacted-away records.
func (s *stream) rebuild() {
	var l entryLog
	for i := s.head; i < s.log.len(); i++ {
		if e := s.log.at(i); !e.dead {
			l.push(*e)
		}
	}
	s.log, s.head, s.dead, s.shared = l, 0, 0, false
}

// unshare gives the stream its own copy of the entries a snapshot shares.
func (s *stream) unshare() {
	var l entryLog
	for i := s.head; i < s.log.len(); i++ {
		l.push(*s.log.at(i))
	}
	s.log, s.head, s.shared = l, 0, false
}

// find returns the index in log of the first entry at or after offset off.
func (s *stream) find(off uint64) int {
	return s.head + sort.Search(s.log.len()-s.head, func(i int) bool { return s.log.at(s.head+i).off >= off })
}

// read returns up to limit live records from offset on, and the offset to read on from: the
// offset of the first record not returned, or the stream's next offset if none is left.
// Key and Value slices are shared with the stream and must not be modified.
func (s *stream) read(offset uint64, limit int) ([]Record, uint64, error) {
	if offset < s.first {
		return nil, s.first, &OffsetTrimmedError{Stream: s.name, Offset: offset, First: s.first}
	}
	var out []Record
	i := s.find(offset)
	for ; i < s.log.len() && len(out) < limit; i++ {
		if e := s.log.at(i); !e.dead {
			out = append(out, Record{Offset: e.off, Key: e.key(), Value: e.value(), EventTime: e.time})
		}
	}
	for i < s.log.len() && s.log.at(i).dead {
		i++
	}
	if i < s.log.len() {
		return out, s.log.at(i).off, nil
	}
	return out, max(offset, s.next), nil
}
