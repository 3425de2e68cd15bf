package pgsink

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/client"
)

// Record is one stream record as the sink receives it.
type Record struct {
	// Partition and Offset place the record in its stream.
	Partition int
	Offset    uint64
	// Key, Value and EventTime are the record's contents.
	Key, Value []byte
	EventTime  time.Time
}

// Source delivers a stream's records; the sink owns it and closes it. It has the shape of
// client.Subscription.
type Source interface {
	// Next waits for records and returns those that have arrived (at least one), in
	// offset order per partition. It returns ctx.Err() when ctx ends, and a terminal error
	// when the source cannot go on.
	Next(ctx context.Context) ([]Record, error)
	// Close ends the source and frees its resources.
	Close() error
}

// Origin is the sink's access to a cluster: it checks streams, opens Sources on them and
// joins consumer groups.
//
// SubscribeOrigin reads by push subscription (client.SubscribePartitions); PollOrigin
// reads with client.ReadStream.
type Origin interface {
	// CheckStream returns the number of partitions of stream, or an error matching
	// ErrUnknownStream if stream does not exist.
	CheckStream(ctx context.Context, stream string) (partitions int, err error)
	// Open returns a Source of the listed partitions of stream, each from the offset in
	// from; a partition missing from from starts at its first retained record.
	Open(ctx context.Context, stream string, partitions []int, from map[int]uint64) (Source, error)
	// JoinGroup joins member to the consumer group on stream (client.Client.JoinGroup).
	JoinGroup(ctx context.Context, group, stream, member string, opts ...client.GroupOption) (*client.GroupMember, error)
}

// checkStream is CheckStream of both origins.
func checkStream(ctx context.Context, cl *client.Client, stream string) (int, error) {
	desc, err := cl.DescribeStream(ctx, stream)
	if err != nil {
		return 0, streamErr(stream, err)
	}
	return len(desc.Partitions), nil
}

// streamErr translates the client's ErrUnknownStream for stream into the sink's; it
// returns any other err as it is.
func streamErr(stream string, err error) error {
	if errors.Is(err, client.ErrUnknownStream) {
		return fmt.Errorf("%w %q: %w", ErrUnknownStream, stream, err)
	}
	return err
}

// PollOrigin is an Origin that reads with client.ReadStream, polling a partition again
// after Poll when it found nothing.
type PollOrigin struct {
	// Client reads the stream. Required.
	Client *client.Client
	// Poll is the pause after a read that found nothing. Default 20ms.
	Poll time.Duration
	// Batch is the most records one read asks for (and one Next returns). Default 4096.
	Batch int
}

// CheckStream implements Origin.
func (o *PollOrigin) CheckStream(ctx context.Context, stream string) (int, error) {
	return checkStream(ctx, o.Client, stream)
}

// JoinGroup implements Origin.
func (o *PollOrigin) JoinGroup(ctx context.Context, group, stream, member string, opts ...client.GroupOption) (*client.GroupMember, error) {
	return o.Client.JoinGroup(ctx, group, stream, member, opts...)
}

// Open implements Origin: one reader goroutine per partition, each handing batches to Next
// through a bounded channel.
func (o *PollOrigin) Open(ctx context.Context, stream string, partitions []int, from map[int]uint64) (Source, error) {
	desc, err := o.Client.DescribeStream(ctx, stream)
	if err != nil {
		return nil, streamErr(stream, err)
	}
	first := map[int]uint64{}
	for _, p := range desc.Partitions {
		first[int(p.Partition)] = p.FirstOffset
	}
	poll, batch := o.Poll, o.Batch
	if poll <= 0 {
		poll = 20 * time.Millisecond
	}
	if batch <= 0 {
		batch = 4096
	}
	rctx, cancel := context.WithCancel(context.Background())
	s := &pollSource{cancel: cancel, batches: make(chan []Record, len(partitions)), errs: make(chan error, len(partitions))}
	for _, part := range partitions {
		next, ok := from[part]
		if !ok {
			next = first[part]
		}
		s.wg.Go(func() { s.follow(rctx, o.Client, stream, part, next, poll, batch) })
	}
	return s, nil
}

// pollSource is the Source of a PollOrigin.
type pollSource struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	batches chan []Record // bounded: one pending batch per partition
	errs    chan error
}

// follow reads partition part from next on and sends its batches until ctx ends or a read
// fails for good. The client fails over between nodes by itself; a read error other
// than a trimmed offset or an unknown stream (the node that answered is going away) is
// tried again after poll.
func (s *pollSource) follow(ctx context.Context, cl *client.Client, stream string, part int, next uint64, poll time.Duration, batch int) {
	for ctx.Err() == nil {
		recs, nx, err := cl.ReadStream(ctx, stream, part, next, batch)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, client.ErrOffsetTrimmed), errors.Is(err, client.ErrUnknownStream):
			s.errs <- fmt.Errorf("pgsink: read %s partition %d at offset %d: %w", stream, part, next, err)
			return
		case err != nil:
			pause(ctx, poll)
			continue
		}
		next = nx
		if len(recs) == 0 {
			pause(ctx, poll)
			continue
		}
		out := make([]Record, len(recs))
		for i, r := range recs {
			out[i] = Record{Partition: part, Offset: r.Offset, Key: r.Key, Value: r.Data, EventTime: r.EventTime}
		}
		select {
		case s.batches <- out:
		case <-ctx.Done():
			return
		}
	}
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Next implements Source: the batches ready now, at least one.
func (s *pollSource) Next(ctx context.Context) ([]Record, error) {
	var out []Record
	select {
	case b := <-s.batches:
		out = b
	case err := <-s.errs:
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for {
		select {
		case b := <-s.batches:
			out = append(out, b...)
		default:
			return out, nil
		}
	}
}

// Close implements Source.
func (s *pollSource) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}
