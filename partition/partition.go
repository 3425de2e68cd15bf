package partition

import (
	"fmt"
	"sort"
	"sync"
)

// Partition is the state of one partition: named ordered tables, replicated tables and
// output streams. The executor changes it; other goroutines read it through the exported
// methods, which wait while the executor runs inputs on it, so they see only whole inputs.
type Partition struct {
	id int

	mu      sync.RWMutex // held for writing by the executor while it runs inputs here
	tables  map[string]*table
	streams map[string]*stream
	outbox  []outRecord // records emitted to other partitions in this log entry: see Tx.Emit
	// appended counts the stream records that committed inputs (not processors) appended
	// here since the last processor phase, which scales the phase's budget
	// (ProcessorPhase.BudgetPerAppend). Every entry ends with a phase, so it is 0 between
	// entries, where snapshots are taken.
	appended int
}

func newPartition(id int, replicated []string) *Partition {
	p := &Partition{id: id, tables: map[string]*table{}, streams: map[string]*stream{}}
	for _, name := range replicated {
		p.tables[name] = newTable(name, true)
	}
	return p
}

// ID returns the partition's number, from 0 to the engine's partition count minus one.
func (p *Partition) ID() int { return p.id }

// tableFor returns the named table, creating an ordinary one when create is set.
func (p *Partition) tableFor(name string, create bool) *table {
	t := p.tables[name]
	if t == nil && create {
		t = newTable(name, false)
		p.tables[name] = t
	}
	return t
}

// hashLocked is the incrementally maintained state hash; the caller holds mu.
func (p *Partition) hashLocked() uint64 {
	var sum uint64
	for _, t := range p.tables {
		sum += t.sum
	}
	for _, s := range p.streams {
		sum += s.stateHash()
	}
	return sum
}

// Hash returns the partition's state hash, maintained incrementally as inputs run. Two
// partitions with equal tables and streams have equal hashes.
func (p *Partition) Hash() uint64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.hashLocked()
}

// RecomputeHash computes the state hash from every row and record; tests use it to check
// the incremental Hash.
func (p *Partition) RecomputeHash() uint64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var sum uint64
	for _, t := range p.tables {
		sum += t.hash()
	}
	for _, s := range p.streams {
		sum += s.hash()
	}
	return sum
}

// Get returns a copy of the value stored under key in table.
func (p *Partition) Get(table string, key []byte) ([]byte, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	t := p.tables[table]
	if t == nil {
		return nil, false
	}
	v, ok := t.lookup(key) // not get: concurrent readers must not share its path hint
	return append([]byte(nil), v...), ok
}

// Scan calls fn with a copy of each row of table in the range, in order, until fn returns
// false. fn must not call back into the partition.
func (p *Partition) Scan(table string, opts ScanOptions, fn func(key, value []byte) bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	t := p.tables[table]
	if t == nil {
		return
	}
	t.scan(opts, func(k, v []byte) bool {
		return fn(append([]byte(nil), k...), append([]byte(nil), v...))
	})
}

// ReadStream returns up to max live records of the named stream from offset on, in
// offset order, and the offset to read on from: the offset of the first record not
// returned, or the stream's next offset when none is left. It skips the gaps compaction
// leaves. It fails with ErrUnknownStream, and with an *OffsetTrimmedError (matching
// ErrOffsetTrimmed, naming the first offset available) below the stream's first offset.
// Record keys and values must not be modified.
func (p *Partition) ReadStream(name string, offset uint64, max int) (records []Record, next uint64, err error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	s := p.streams[name]
	if s == nil {
		return nil, offset, fmt.Errorf("stream %q: %w", name, ErrUnknownStream)
	}
	return s.read(offset, max)
}

// StreamInfo describes the named stream of this partition.
func (p *Partition) StreamInfo(name string) (StreamInfo, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if s := p.streams[name]; s != nil {
		return s.info(), true
	}
	return StreamInfo{}, false
}

// Tables returns the names of the partition's tables in ascending order.
func (p *Partition) Tables() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return sortedKeys(p.tables)
}

// Streams returns the names of the partition's output streams in ascending order.
func (p *Partition) Streams() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return sortedKeys(p.streams)
}

// Rows returns the number of rows in table.
func (p *Partition) Rows(table string) int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if t := p.tables[table]; t != nil {
		return t.tree.Len()
	}
	return 0
}

func sortedKeys[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
