package partition

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Tx is the transactional view of the partitions one input reaches, handed to its
// procedure. Reads see the input's own writes. The input's writes, deletes and stream
// appends take effect together when the procedure returns without error, and are undone
// when it returns an error or panics.
//
// A Tx is bound to one partition: the input's home partition, or for a multi-partition
// input the lowest partition of its scope; On returns the view of another partition in
// scope. A Tx is only valid while its procedure runs and must not be used from other
// goroutines. Slices it returns must not be modified and are valid only during the call.
type Tx struct {
	run  *txRun
	part *Partition
}

// undoEntry reverses one change to a table or stream.
type undoEntry struct {
	part    *Partition
	table   *table  // nil for a stream append
	stream  *stream // nil for a table change
	key     string
	old     []byte
	existed bool
	created bool // the input created table or stream: rollback removes it again
	deleted bool // the input deleted the stream: rollback puts it back
	outbox  bool // an Emit to another partition: rollback truncates part's outbox
	length  int  // the stream's entry count (or outbox length) before the append
}

// txRun is the state of one input's run shared by its views; reused from input to input.
type txRun struct {
	eng      *Engine
	in       *Input
	views    []Tx // one per partition in scope, in scope order
	undo     []undoEntry
	settle   []*stream // streams appended to: compaction and retention run at commit
	scanning int
	done     bool
	pcg      rand.PCG
	rng      *rand.Rand
	rngSeed  bool
	readOnly bool     // a Query: every write fails with ErrReadOnlyTx
	proc     *procDef // the processor of a processor step; nil for an input
}

func (r *txRun) reset(in *Input, parts []*Partition) {
	r.in = in
	r.views = r.views[:0]
	for _, p := range parts {
		r.views = append(r.views, Tx{run: r, part: p})
	}
	r.undo = r.undo[:0]
	r.scanning = 0
	r.done = false
	r.rngSeed = false
	r.proc = nil
}

// rollback undoes every change of the run, newest first.
func (r *txRun) rollback() {
	for i := len(r.undo) - 1; i >= 0; i-- {
		u := &r.undo[i]
		switch {
		case u.outbox:
			u.part.truncateOutbox(u.length)
		case u.created && u.stream != nil:
			delete(u.part.streams, u.stream.name)
		case u.deleted:
			u.part.streams[u.stream.name] = u.stream
		case u.created:
			delete(u.part.tables, u.table.name)
		case u.stream != nil:
			u.stream.truncate(u.length)
		case u.existed:
			u.table.put([]byte(u.key), u.old)
		default:
			u.table.delete([]byte(u.key))
		}
		*u = undoEntry{}
	}
	r.undo = r.undo[:0]
	for _, s := range r.settle {
		s.pending = false
	}
	clear(r.settle)
	r.settle = r.settle[:0]
}

// commit keeps the run's changes and settles the streams it appended to: compaction, then
// retention by the input's batch time, so every replica trims at the same log position.
func (r *txRun) commit() {
	if r.proc == nil {
		for i := range r.undo {
			if u := &r.undo[i]; u.stream != nil && !u.created && !u.deleted {
				u.part.appended++ // one undo entry per appended record
			}
		}
	}
	clear(r.undo) // drop references to old values
	r.undo = r.undo[:0]
	nowMs := r.in.Time / 1e6
	for _, s := range r.settle {
		s.settle(nowMs)
		s.pending = false
	}
	clear(r.settle)
	r.settle = r.settle[:0]
}

// Partition returns the number of the partition this view reads and writes.
func (tx *Tx) Partition() int { return tx.part.id }

// Partitions returns the total number of partitions of the engine.
func (tx *Tx) Partitions() int { return len(tx.run.eng.parts) }

// Scope returns the partitions the input reaches: its home partition alone, or the
// multi-partition scope. The slice must not be modified.
func (tx *Tx) Scope() []int {
	if tx.run.in.Scope != nil {
		return tx.run.in.Scope
	}
	return []int{tx.part.id}
}

// Key returns the input's partition key (nil for a multi-partition input without one).
func (tx *Tx) Key() []byte { return tx.run.in.Key }

// PartitionOf returns the partition that owns key.
func (tx *Tx) PartitionOf(key []byte) int { return PartitionOf(key, len(tx.run.eng.parts)) }

// On returns the view of partition p, which must be in the input's scope.
func (tx *Tx) On(p int) (*Tx, error) {
	for i := range tx.run.views {
		if tx.run.views[i].part.id == p {
			return &tx.run.views[i], nil
		}
	}
	return nil, fmt.Errorf("partition %d: %w", p, ErrOutOfScope)
}

// Now returns the input's batch time: the same on every replica, never the local clock.
func (tx *Tx) Now() time.Time { return time.Unix(0, tx.run.in.Time).UTC() }

// Rand returns a random source seeded from the input's log position (a processor's, from
// its record's stream, partition and offset), so it yields the same sequence on every
// replica. It is shared by all views of one input.
func (tx *Tx) Rand() *rand.Rand {
	r := tx.run
	if !r.rngSeed {
		r.pcg.Seed(r.in.Seq, 0x6c6f636b73746570) // "lockstep"
		if r.rng == nil {
			r.rng = rand.New(&r.pcg)
		}
		r.rngSeed = true
	}
	return r.rng
}

func (tx *Tx) checkLive() error {
	if tx.run.done {
		return ErrTxDone
	}
	return nil
}

func (tx *Tx) checkWritable() error {
	if err := tx.checkLive(); err != nil {
		return err
	}
	if tx.run.readOnly {
		return ErrReadOnlyTx
	}
	if tx.run.scanning > 0 {
		return ErrWriteDuringScan
	}
	return nil
}

// Get returns the value stored under key in table, seeing the input's own writes.
func (tx *Tx) Get(table string, key []byte) ([]byte, bool) {
	if tx.run.done {
		return nil, false
	}
	t := tx.part.tables[table]
	if t == nil {
		return nil, false
	}
	if tx.run.readOnly {
		// A Query holds only the read lock, alongside other readers: no shared path hint.
		return t.lookup(key)
	}
	return t.get(key)
}

// Put stores a copy of value under key in table, creating the table if needed. Writing a
// replicated table writes its copy in every partition and needs an input that reaches all.
// For a table that publishes its changes (Config.Changelogs) it also appends the change to
// the changelog stream, or fails, changing nothing, if that stream does not exist.
func (tx *Tx) Put(name string, key, value []byte) error {
	if err := tx.checkWrite(name, key); err != nil {
		return err
	}
	if err := checkValue(value); err != nil {
		return fmt.Errorf("put %s: %d bytes: %w", name, len(value), err)
	}
	cl, err := tx.changelogFor(name, 1+len(value))
	if err != nil {
		return err
	}
	stored := append(make([]byte, 0, len(value)), value...)
	if err := tx.eachCopy(name, true, func(p *Partition, t *table) {
		k, old, existed := t.put(key, stored)
		tx.run.undo = append(tx.run.undo, undoEntry{part: p, table: t, key: k, old: old, existed: existed})
	}); err != nil {
		return err
	}
	if cl != nil {
		tx.appendChange(cl, key, value, false)
	}
	return nil
}

// Update replaces the value under key in table with a value of size bytes that fill
// writes into dst, given the current value (old, found as Get returns them); a
// read-modify-write such as a counter's add. It has Put's effects, errors and undo, and
// fill's error, returned as is, leaves everything as it was. On a table of this partition
// that publishes no changelog and already exists it costs one tree descent instead of a
// Get's and a Put's; otherwise it is Get, fill, then Put. fill must not use tx.
func (tx *Tx) Update(name string, key []byte, size int, fill func(dst, old []byte, found bool) error) error {
	if err := tx.checkWrite(name, key); err != nil {
		return err
	}
	if size < 0 || size > MaxValueBytes {
		return fmt.Errorf("put %s: %d bytes: %w", name, size, ErrValueTooLarge)
	}
	t := tx.part.tables[name]
	if _, cl := tx.run.eng.cfg.Changelogs[name]; cl || t == nil || t.replicated {
		old, found := tx.Get(name, key)
		dst := make([]byte, size)
		if err := fill(dst, old, found); err != nil {
			return err
		}
		return tx.Put(name, key, dst)
	}
	dst := make([]byte, size)
	stored, old, existed := t.swap(key, dst)
	filled := false
	defer func() {
		if !filled { // fill failed or panicked: the row as it was
			t.unswap(stored, old, existed)
		}
	}()
	if err := fill(dst, old, existed); err != nil {
		return err
	}
	filled = true
	t.swapped(key, dst, old, existed)
	tx.run.undo = append(tx.run.undo, undoEntry{part: tx.part, table: t, key: stored, old: old, existed: existed})
	return nil
}

// Delete removes key from table; deleting an absent key is not an error. For a table that
// publishes its changes, deleting an existing row appends a tombstone to the changelog
// stream (an absent one appends nothing), and a missing stream fails the Delete.
func (tx *Tx) Delete(name string, key []byte) error {
	if err := tx.checkWrite(name, key); err != nil {
		return err
	}
	cl, err := tx.changelogFor(name, 1)
	if err != nil {
		return err
	}
	deleted := false
	if err := tx.eachCopy(name, false, func(p *Partition, t *table) {
		if k, old, existed := t.delete(key); existed {
			tx.run.undo = append(tx.run.undo, undoEntry{part: p, table: t, key: k, old: old, existed: true})
			deleted = true
		}
	}); err != nil {
		return err
	}
	if cl != nil && deleted {
		tx.appendChange(cl, key, nil, true)
	}
	return nil
}

func (tx *Tx) checkWrite(table string, key []byte) error {
	if err := tx.checkWritable(); err != nil {
		return err
	}
	if err := checkName(table); err != nil {
		return fmt.Errorf("table %q: %w", table, err)
	}
	if isSysTable(table) {
		return fmt.Errorf("table %s: %w", table, ErrSystemTable)
	}
	if err := checkKey(key); err != nil {
		return fmt.Errorf("table %s: key of %d bytes: %w", table, len(key), err)
	}
	return nil
}

// eachCopy calls fn with the table in this partition, or, for a replicated table, with its
// copy in every partition. A missing table is created when create is set (and removed
// again if the input fails, invariant 2); otherwise fn is not called.
func (tx *Tx) eachCopy(name string, create bool, fn func(*Partition, *table)) error {
	t := tx.part.tables[name]
	if t == nil {
		if !create {
			return nil
		}
		t = tx.part.tableFor(name, true)
		tx.run.undo = append(tx.run.undo, undoEntry{part: tx.part, table: t, created: true})
	}
	if !t.replicated {
		fn(tx.part, t)
		return nil
	}
	if len(tx.run.views) != len(tx.run.eng.parts) {
		return fmt.Errorf("table %s: %w", name, ErrReplicatedWrite)
	}
	for i := range tx.run.views {
		p := tx.run.views[i].part
		fn(p, p.tables[name])
	}
	return nil
}

// Scan calls fn for each row of table in the range, in key order (descending with
// opts.Reverse), until fn returns false or opts.Limit rows were visited. fn must not write.
func (tx *Tx) Scan(table string, opts ScanOptions, fn func(key, value []byte) bool) error {
	if err := tx.checkLive(); err != nil {
		return err
	}
	t := tx.part.tables[table]
	if t == nil {
		return nil
	}
	tx.run.scanning++
	defer func() { tx.run.scanning-- }()
	t.scan(opts, fn)
	return nil
}

// Changes returns the number of changes the input has made so far; the procedure layer
// uses it to enforce read-only procedures.
func (tx *Tx) Changes() int { return len(tx.run.undo) }
