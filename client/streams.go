package client

import (
	"context"
	"fmt"
	"time"

	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// Streams: typed helpers for the stream.* built-ins. A stream is created with a
// retention policy (Client.Streams().Create) before anything is appended to it
// (appending to a stream that does not exist fails with ErrUnknownStream); every
// invocation here is exactly-once like any other. Read records with ReadStream, one
// partition at a time, or Subscribe.

// StreamRecord is one record of AppendBatch.
type StreamRecord struct {
	// Key chooses the record's partition (hash(key) mod P); it must not be empty.
	Key []byte
	// Value is the record's payload.
	Value []byte
	// EventTime is the record's event time, kept with millisecond precision; the zero
	// time means the batch time of the append.
	EventTime time.Time
}

// AppendOption changes one Append.
type AppendOption func(*builtin.StreamAppendArgs)

// WithEventTime sets the record's event time (millisecond precision); without it the
// record gets the batch time of the append.
func WithEventTime(t time.Time) AppendOption {
	return func(a *builtin.StreamAppendArgs) { a.EventTime = eventMs(t) }
}

func eventMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// Append appends a record with key and value to stream in the partition key hashes to,
// and returns its offset there, the same on every replica. A stream that does not exist
// fails with ErrUnknownStream.
func (c *Client) Append(ctx context.Context, stream string, key, value []byte, opts ...AppendOption) (offset uint64, err error) {
	args := builtin.StreamAppendArgs{Stream: stream, Record: value}
	for _, o := range opts {
		o(&args)
	}
	return InvokeAs[uint64](ctx, c, builtin.StreamAppend, key, args)
}

// AppendBatch appends records to stream in one exactly-once invocation: all of them or,
// on error, none. Each goes to its key's partition; records of one partition get
// ascending offsets in slice order. It returns the offsets in record order. The
// invocation is multi-partition over the records' partitions (a barrier there), so one
// batch of many records costs one log entry instead of many.
func (c *Client) AppendBatch(ctx context.Context, stream string, records []StreamRecord) ([]uint64, error) {
	if len(records) == 0 {
		return nil, nil
	}
	args := builtin.StreamAppendBatchArgs{Stream: stream, Records: make([]builtin.StreamRecord, len(records))}
	keys := make([][]byte, len(records))
	for i, r := range records {
		if len(r.Key) == 0 {
			return nil, fmt.Errorf("client: %s: %w: record %d has an empty key", builtin.StreamAppendBatch, ErrBadArguments, i)
		}
		keys[i] = r.Key
		args.Records[i] = builtin.StreamRecord{Key: keys[i], Value: r.Value, EventTime: eventMs(r.EventTime)}
	}
	return InvokeMultiAs[[]uint64](ctx, c, builtin.StreamAppendBatch, keys, args)
}

// Streams is the stream-administration part of a Client: creating, deleting, listing
// and describing streams, each an exactly-once multi-partition invocation of a stream.*
// built-in at one log position. Get it from Client.Streams; it shares the Client's
// session and connections.
type Streams struct{ c *Client }

// Streams returns the Client's stream-administration calls.
func (c *Client) Streams() Streams { return Streams{c} }

// Create creates a stream on every partition, at one log position, with the given
// retention and key compaction (def.Name names it). A stream of that name fails with
// ErrStreamExists; a negative bound with ErrBadArguments.
func (s Streams) Create(ctx context.Context, def builtin.StreamDefinition) error {
	_, err := InvokeMultiAs[builtin.StreamDefinition](ctx, s.c, builtin.StreamCreate, nil, def)
	return err
}

// Delete deletes a stream and its records on every partition. A stream that does not
// exist fails with ErrUnknownStream.
func (s Streams) Delete(ctx context.Context, name string) error {
	_, err := InvokeMultiAs[builtin.NoArgs](ctx, s.c, builtin.StreamDelete, nil, builtin.StreamNameArgs{Name: name})
	return err
}

// List returns every stream's definition, by name.
func (s Streams) List(ctx context.Context) ([]builtin.StreamDefinition, error) {
	return InvokeMultiAs[[]builtin.StreamDefinition](ctx, s.c, builtin.StreamList, nil, builtin.NoArgs{})
}

// Describe returns a stream's definition and, per partition, its first and next offsets
// and its live records and bytes, read at one log position. A stream that does not exist
// fails with ErrUnknownStream.
func (s Streams) Describe(ctx context.Context, name string) (builtin.StreamDescription, error) {
	return InvokeMultiAs[builtin.StreamDescription](ctx, s.c, builtin.StreamDescribe, nil, builtin.StreamNameArgs{Name: name})
}
