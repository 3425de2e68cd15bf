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
	slabFirst = 1 << 10       // bytes of a slab's first block; each next is twice the last
	slabBlock = 64 << 10      // bytes of the largest blocks
	slabLarge = slabBlock / 8 // a larger record gets its own allocation (waste ≤ 1/8 a block)
)

// slab cuts records from blocks. It belongs to one stream on one partition, and is used
// only by the goroutine running that partition: for the records appended to the stream
// there, and for those emitted from there to the stream on other partitions (which
// Engine.deliver moves without copying). Bytes it has handed out are never
// handed out again (an undone append leaves its bytes unused), so the slices it returns
// stay valid and unchanged for as long as they are referenced.
//
// Blocks start small and double up to slabBlock, so that the many streams that hold a few
// records (most of the streams of a small deployment, on every partition) take a few KiB
// each rather than a full block.
type slab struct {
	free []byte // the rest of the current block
	next int    // the size of the next block; 0: slabFirst
}

// copyRecord returns a copy of key followed by value, its capacity clipped so that
// appending to it cannot reach the next record.
func (b *slab) copyRecord(key, value []byte) []byte {
	n := len(key) + len(value)
	if n > slabLarge {
		return copyRecord(key, value)
	}
	if len(b.free) < n {
		size := max(b.next, slabFirst)
		b.next = min(2*size, slabBlock)
		b.free = make([]byte, max(size, n))
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
