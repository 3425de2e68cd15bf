package partition

// Record bytes in blocks. A stream of millions of records, each key and value in its own
// allocation, is millions of small objects that every garbage collection marks one by
// one, and the allocation per append is a sizeable share of an append's cost (the
// Nexmark profiles on node processes: GC mark 9–12 %, mallocgc 12–13 %). A stream that
// is only ever trimmed from the front frees its records in the order it appended them,
// so its records are cut from large blocks instead: a block is freed when the last
// record in it is trimmed, and the collector sees one object per block.
//
// A compacted stream keeps a record of each key for as long as the key is not written
// again, whatever its age: one such record would keep its whole block, so compacted
// streams allocate each record alone, as before.

const (
	slabBlock = 64 << 10      // bytes per block
	slabLarge = slabBlock / 8 // a larger record gets its own allocation (waste ≤ 1/8 a block)
)

// slab cuts records from blocks. It belongs to one stream on one partition, and is used
// only by the goroutine running that partition: for the records appended to the stream
// there, and for those emitted from there to the stream on other partitions (which
// Engine.deliver moves without copying). Bytes it has handed out are never
// handed out again (an undone append leaves its bytes unused), so the slices it returns
// stay valid and unchanged for as long as they are referenced.
type slab struct {
	free []byte // the rest of the current block
}

// copyRecord returns a copy of key followed by value, its capacity clipped so that
// appending to it cannot reach the next record.
func (b *slab) copyRecord(key, value []byte) []byte {
	n := len(key) + len(value)
	if n > slabLarge {
		return copyRecord(key, value)
	}
	if len(b.free) < n {
		b.free = make([]byte, slabBlock)
	}
	data := b.free[:n:n]
	b.free = b.free[n:]
	copy(data, key)
	copy(data[len(key):], value)
	return data
}

// copyRecord returns a copy of key followed by value for s: from its slab unless s is
// compacted.
func (s *stream) copyRecord(key, value []byte) []byte {
	if s.cfg.Compact {
		return copyRecord(key, value)
	}
	return s.slab.copyRecord(key, value)
}
