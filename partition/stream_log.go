package partition

// chunkShift sets the entries per chunk of an entryLog: 1,024 (72 KiB).
const (
	chunkShift   = 10
	chunkEntries = 1 << chunkShift
	chunkMask    = chunkEntries - 1
)

// entryLog holds a stream partition's entries in offset order, by index, in chunks of
// chunkEntries: appending never copies the entries already there (a stream of millions of
// records used to be one slice, copied whole each time it doubled), and trimmed chunks
// at the front are dropped whole. Every chunk but the last holds exactly chunkEntries
// entries, so entry i is chunks[i>>chunkShift][i&chunkMask]. The first chunk starts
// small and grows to chunkEntries, so a small stream stays small.
//
// A view (a Snapshot's) shares the chunks: the log only writes entries at indexes the
// view does not reach (appends, and truncate of them), except through stream.unshare.
type entryLog struct {
	chunks [][]entry
	n      int
}

func (l *entryLog) len() int { return l.n }

// at returns entry i, 0 ≤ i < len.
func (l *entryLog) at(i int) *entry { return &l.chunks[i>>chunkShift][i&chunkMask] }

// push appends e.
func (l *entryLog) push(e entry) {
	c := l.n >> chunkShift
	if c == len(l.chunks) {
		size := chunkEntries
		if c == 0 {
			size = 16
		}
		l.chunks = append(l.chunks, make([]entry, 0, size))
	}
	l.chunks[c] = append(l.chunks[c], e)
	l.n++
}

// truncate drops the entries at index m and after, zeroing them so that they hold no
// key or value.
func (l *entryLog) truncate(m int) {
	for i := m; i < l.n; i++ {
		*l.at(i) = entry{}
	}
	keep := (m + chunkMask) >> chunkShift
	clear(l.chunks[keep:])
	l.chunks = l.chunks[:keep]
	if keep > 0 {
		l.chunks[keep-1] = l.chunks[keep-1][:m-(keep-1)<<chunkShift]
	}
	l.n = m
}

// dropFront drops the first k chunks; entry i becomes entry i − k·chunkEntries.
func (l *entryLog) dropFront(k int) {
	clear(l.chunks[:k])
	l.chunks = l.chunks[k:]
	l.n -= k << chunkShift
}

// view returns a copy of the log's chunk list, which later appends, truncations and
// drops do not change.
func (l *entryLog) view() entryLog {
	return entryLog{chunks: append([][]entry(nil), l.chunks...), n: l.n}
}
