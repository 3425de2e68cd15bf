package replica

import (
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
)

// Stream reads for consumers and subscribers. Offsets are identical on every replica, so
// a reader may move between replicas without gap or duplicate. Both methods read the
// state applied so far, under the partition's read lock: safe for concurrent use with
// Apply, and between two applied entries they see one or the other, never a mix within a
// stream.

// ReadStream returns up to max records of the named stream on partition part, from offset
// on, as applied so far, and the offset to read next (past the last record returned, or
// past a compaction gap at the end). It fails with partition.ErrUnknownStream for a stream
// that does not exist, *partition.OffsetTrimmedError for an offset retention trimmed, and
// partition.ErrBadScope for a partition out of range. The records alias the replica's
// state: the caller must not change them.
func (f *FSM) ReadStream(part int, stream string, offset uint64, max int) ([]partition.Record, uint64, error) {
	p, err := f.partition(part)
	if err != nil {
		return nil, offset, err
	}
	return p.ReadStream(stream, offset, max)
}

// StreamInfo describes the named stream on partition part as applied so far; false if
// the stream does not exist there or part is out of range.
func (f *FSM) StreamInfo(part int, stream string) (partition.StreamInfo, bool) {
	p, err := f.partition(part)
	if err != nil {
		return partition.StreamInfo{}, false
	}
	return p.StreamInfo(stream)
}

// partition returns partition part of the engine.
func (f *FSM) partition(part int) (*partition.Partition, error) {
	parts := f.eng.Partitions()
	if part < 0 || part >= len(parts) {
		return nil, fmt.Errorf("%w: stream partition %d of %d", partition.ErrBadScope, part, len(parts))
	}
	return parts[part], nil
}
