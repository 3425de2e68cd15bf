package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// Record is one record of a stream.
type Record struct {
	// Partition is the stream partition the record belongs to.
	Partition int
	// Offset is the record's position in its stream partition, identical on every replica.
	// Offsets of a key-compacted stream have gaps where older records of a key were.
	Offset uint64
	// Key is the record's key, which chose its partition.
	Key []byte
	// Data is the record's value, as appended.
	Data []byte
	// EventTime is the record's event time (the producer's, or the batch time of the
	// append when it gave none), with millisecond precision, in UTC.
	EventTime time.Time
}

// OffsetTrimmedError is the error of a ReadStream below the partition's first offset: the
// records there were trimmed by the stream's retention. It matches ErrOffsetTrimmed; read
// on from First.
type OffsetTrimmedError struct {
	// Stream and Partition name the stream partition read.
	Stream    string
	Partition int
	// Offset is the offset asked for.
	Offset uint64
	// First is the lowest offset still available.
	First uint64
	// Err is the node's error, matching ErrOffsetTrimmed.
	Err error
}

func (e *OffsetTrimmedError) Error() string {
	return fmt.Sprintf("client: read stream %q partition %d: offset %d trimmed, first available offset %d",
		e.Stream, e.Partition, e.Offset, e.First)
}

// Unwrap returns the node's error, so errors.Is(err, ErrOffsetTrimmed) holds.
func (e *OffsetTrimmedError) Unwrap() error { return e.Err }

// ReadStream reads up to limit records (limit ≤ 0: as many as the server returns at once) of
// partition partition of stream stream, from offset on. It returns the records in offset
// order and the offset to read from next. Any ready replica answers from the state it has
// applied, so a read may see fewer records than the leader holds; offsets are the same on
// every replica, so reading on from next never skips nor repeats a record, whichever
// replica answers.
//
// A stream that does not exist fails with ErrUnknownStream. An offset below the first one
// retention kept fails with an *OffsetTrimmedError (matching ErrOffsetTrimmed), and next
// is then that first offset.
func (c *Client) ReadStream(ctx context.Context, stream string, partition int, offset uint64, limit int) ([]Record, uint64, error) {
	if partition < 0 || partition > math.MaxInt32 {
		return nil, offset, fmt.Errorf("client: read stream %q: %w: partition %d", stream, ErrBadScope, partition)
	}
	req := wire.Request{Op: wire.OpStreamRead, Stream: stream, Partition: int32(partition), Offset: offset, Full: true}
	if limit > 0 {
		req.Max = uint32(min(limit, wire.MaxListLen))
	}
	if err := c.acquireFree(ctx); err != nil {
		return nil, offset, c.opErr(fmt.Errorf("client: read stream %q: %w", stream, err))
	}
	defer c.releaseFree()
	resp, err := c.call(ctx, "read stream "+stream, &req, false)
	if err != nil {
		if errors.Is(err, wire.ErrOffsetTrimmed) && resp.NextOffset > offset {
			return nil, resp.NextOffset, &OffsetTrimmedError{Stream: stream, Partition: partition, Offset: offset, First: resp.NextOffset, Err: publicErr(err)}
		}
		return nil, offset, c.opErr(err)
	}
	if len(resp.Records) > 0 && len(resp.Entries) == 0 {
		return legacyRecords(stream, partition, offset, &resp)
	}
	if err := entryOrderErr(resp.Entries, offset, resp.NextOffset); err != nil {
		return nil, offset, fmt.Errorf("client: read stream %q from %d: %w: %w", stream, offset, ErrMalformed, err)
	}
	recs := make([]Record, len(resp.Entries))
	for i := range resp.Entries {
		recs[i] = recordFromWire(partition, &resp.Entries[i])
	}
	return recs, resp.NextOffset, nil
}

// recordFromWire is the Record of e, a record of partition partition a node sent (read
// or pushed).
func recordFromWire(partition int, e *wire.StreamRecord) Record {
	return Record{Partition: partition, Offset: e.Offset, Key: e.Key, Data: e.Value, EventTime: time.UnixMilli(e.EventTime).UTC()}
}

// legacyRecords reads the answer of a node that predates full records: values only, with
// consecutive offsets ending just before NextOffset.
func legacyRecords(stream string, partition int, offset uint64, resp *wire.Response) ([]Record, uint64, error) {
	n := uint64(len(resp.Records))
	if resp.NextOffset < offset+n {
		return nil, offset, fmt.Errorf("client: read stream %q: %w: %d records from offset %d, next offset %d",
			stream, ErrMalformed, n, offset, resp.NextOffset)
	}
	first := resp.NextOffset - n
	recs := make([]Record, n)
	for i, data := range resp.Records {
		recs[i] = Record{Partition: partition, Offset: first + uint64(i), Data: data}
	}
	return recs, resp.NextOffset, nil
}

// PartitionRuns yields recs, records grouped by partition as Subscription.Next returns
// them, one partition's run at a time. Each run is a slice of recs capped at its length.
func PartitionRuns(recs []Record) iter.Seq[[]Record] {
	return func(yield func([]Record) bool) {
		for len(recs) > 0 {
			n := 1
			for n < len(recs) && recs[n].Partition == recs[0].Partition {
				n++
			}
			if !yield(recs[:n:n]) {
				return
			}
			recs = recs[n:]
		}
	}
}

// entryOrderErr says how entries, the records a node sent from offset from on with next
// offset next, break the order the protocol promises (ascending offsets, none before from,
// next past the last), or returns nil.
func entryOrderErr(entries []wire.StreamRecord, from, next uint64) error {
	prev := from
	for i := range entries {
		if entries[i].Offset < prev {
			return fmt.Errorf("record at offset %d, expected %d or after", entries[i].Offset, prev)
		}
		prev = entries[i].Offset + 1
	}
	if next < prev {
		return fmt.Errorf("next offset %d before %d", next, prev)
	}
	return nil
}
