package client

import (
	"context"
	"fmt"
	"math"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// Record is one record of an output stream.
type Record struct {
	// Offset is the record's position in its stream partition, identical on every replica.
	Offset uint64
	// Data is the record as appended.
	Data []byte
}

// ReadStream reads up to limit records (limit ≤ 0: as many as the server returns at once) of
// partition partition of output stream stream, from offset on. It returns the records in
// offset order and the offset to read from next. Any ready replica answers from the state
// it has applied, so a read may see fewer records than the leader holds; offsets are the
// same on every replica, so reading on from next never skips nor repeats a record, whichever
// replica answers. A stream that does not exist yet reads as empty.
func (c *Client) ReadStream(ctx context.Context, stream string, partition int, offset uint64, limit int) ([]Record, uint64, error) {
	if partition < 0 || partition > math.MaxInt32 {
		return nil, offset, fmt.Errorf("client: read stream %q: %w: partition %d", stream, ErrBadScope, partition)
	}
	req := wire.Request{Op: wire.OpStreamRead, Stream: stream, Partition: int32(partition), Offset: offset}
	if limit > 0 {
		req.Max = uint32(min(limit, wire.MaxListLen))
	}
	if err := c.acquireFree(ctx); err != nil {
		return nil, offset, c.opErr(fmt.Errorf("client: read stream %q: %w", stream, err))
	}
	defer c.releaseFree()
	resp, err := c.call(ctx, "read stream "+stream, &req, false)
	if err != nil {
		return nil, offset, c.opErr(err)
	}
	n := uint64(len(resp.Records))
	if resp.NextOffset < offset+n {
		return nil, offset, fmt.Errorf("client: read stream %q: %w: %d records from offset %d, next offset %d",
			stream, ErrMalformed, n, offset, resp.NextOffset)
	}
	// The records are consecutive and end just before NextOffset.
	first := resp.NextOffset - n
	recs := make([]Record, n)
	for i, data := range resp.Records {
		recs[i] = Record{Offset: first + uint64(i), Data: data}
	}
	return recs, resp.NextOffset, nil
}
