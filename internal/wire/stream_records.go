package wire

import (
	"fmt"
	"math"
)

// StreamRecord is one full stream record of a read (Response.Entries). It is encoded as
// an array of four elements: offset (uint), key (bin), value (bin), event time in Unix
// milliseconds (int).
type StreamRecord struct {
	_msgpack struct{} `msgpack:",as_array"` //nolint:unused // encoded as an array by reflection-based libraries too

	// Offset is the record's offset in its stream partition.
	Offset uint64
	// Key is the record's key.
	Key []byte
	// Value is the record's value.
	Value []byte
	// EventTime is the record's event time in Unix milliseconds.
	EventTime int64
}

// streamRecordOverhead is the most a record's encoding adds to its key and value: array
// header, offset, two bin headers, event time.
const streamRecordOverhead = 1 + 9 + 5 + 5 + 9

// StreamRecordSize is the most bytes rec adds to an encoded Response.
func StreamRecordSize(rec *StreamRecord) int {
	return len(rec.Key) + len(rec.Value) + streamRecordOverhead
}

func appendStreamRecords(b []byte, recs []StreamRecord) []byte {
	b = appendArrayHeader(b, len(recs))
	for i := range recs {
		r := &recs[i]
		b = appendArrayHeader(b, 4)
		b = appendUint(b, r.Offset)
		b = appendBinOrNil(b, r.Key)
		b = appendBinOrNil(b, r.Value)
		b = appendInt(b, r.EventTime)
	}
	return b
}

// appendBinOrNil writes an empty slice as nil, which decodes as nil in any library.
func appendBinOrNil(b []byte, p []byte) []byte {
	if len(p) == 0 {
		return append(b, mpNil)
	}
	return appendBin(b, p)
}

// readInt64 reads any integer in the int64 range.
func (d *decoder) readInt64() (int64, error) {
	start := d.off
	v, neg, err := d.readInteger()
	switch {
	case err != nil:
		return 0, err
	case neg && v <= 1<<63:
		return int64(-v), nil // -(1<<63) wraps to math.MinInt64, as it should
	case !neg && v <= math.MaxInt64:
		return int64(v), nil
	}
	d.off = start
	return 0, d.fail("integer out of range")
}

// readStreamRecords reads a list of at most MaxListLen stream records. An empty list
// decodes as nil; keys and values share b's memory.
func (d *decoder) readStreamRecords() ([]StreamRecord, error) {
	if d.readNil() {
		return nil, nil
	}
	n, err := d.container("array", mpFixArray, mpArray16, mpArray32, 5)
	if err != nil || n == 0 {
		return nil, err
	}
	if n > MaxListLen {
		return nil, d.fail(fmt.Sprintf("list of %d records exceeds MaxListLen", n))
	}
	recs := make([]StreamRecord, n)
	for i := range recs {
		r := &recs[i]
		m, err := d.container("array", mpFixArray, mpArray16, mpArray32, 1)
		if err != nil {
			return nil, err
		}
		if m != 4 {
			return nil, d.fail(fmt.Sprintf("stream record of %d elements, want 4", m))
		}
		if r.Offset, err = d.readUint(math.MaxUint64); err != nil {
			return nil, err
		}
		if r.Key, err = d.readBin(); err != nil {
			return nil, err
		}
		if r.Value, err = d.readBin(); err != nil {
			return nil, err
		}
		if r.EventTime, err = d.readInt64(); err != nil {
			return nil, err
		}
	}
	return recs, nil
}
