package node

import (
	"fmt"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// maxStreamRead bounds the records one stream read returns.
const maxStreamRead = 1024

// maxStreamReadBytes bounds the encoded records of one stream read, so that its response
// always fits one frame: a read returns the records that fit, and always the first (a
// record is at most partition.MaxValueBytes), and NextOffset follows the last returned.
const maxStreamReadBytes = 2 << 20

// recordOverheadBytes is the most a record adds to a legacy response (Records) besides
// its data: a msgpack bin header.
const recordOverheadBytes = 5

// readStream serves a consumer from this replica's applied state: offsets are identical on
// every replica, so a consumer may switch replicas without gaps or duplicates. A read
// below the partition's first offset fails with OffsetTrimmed and NextOffset set to the
// first offset available; a stream that does not exist fails with UnknownStream.
//
// With req.Full the records go in Entries, gaps of key compaction skipped. Without it
// (clients before full records) the values alone go in Records, which must be
// consecutive: the read stops before the first gap, and a read that starts in a gap
// begins at the next live record.
func (cc *clientConn) readStream(req *wire.Request) {
	n := cc.n
	if err := n.ready(); err != nil {
		cc.fail(req.ID, err)
		return
	}
	if P := n.state.Partitions(); req.Partition < 0 || int(req.Partition) >= P {
		cc.fail(req.ID, fmt.Errorf("%w: stream partition %d of %d", wire.ErrBadScope, req.Partition, P))
		return
	}
	max := int(req.Max)
	if max <= 0 || max > maxStreamRead {
		max = maxStreamRead
	}
	recs, next, err := n.state.ReadStream(int(req.Partition), req.Stream, req.Offset, max)
	if err != nil {
		resp := n.streamErrorResponse(req.ID, streamErr(err))
		cc.reply(&resp)
		return
	}
	resp := wire.Response{ID: req.ID, NextOffset: next}
	size := 0
	for i, r := range recs {
		rec := wire.StreamRecord{Offset: r.Offset, Key: r.Key, Value: r.Value, EventTime: r.EventTime}
		if req.Full {
			size += wire.StreamRecordSize(&rec)
		} else {
			size += len(r.Value) + recordOverheadBytes
		}
		gap := i > 0 && r.Offset != recs[i-1].Offset+1
		if (size > maxStreamReadBytes && i > 0) || (gap && !req.Full) {
			resp.NextOffset = r.Offset
			break
		}
		if req.Full {
			resp.Entries = append(resp.Entries, rec)
		} else {
			resp.Records = append(resp.Records, r.Value)
		}
	}
	if !req.Full && len(resp.Records) > 0 {
		// Legacy clients number the records back from NextOffset.
		resp.NextOffset = recs[len(resp.Records)-1].Offset + 1
	}
	cc.reply(&resp)
}
