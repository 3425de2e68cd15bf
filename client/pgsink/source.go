package pgsink

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstepdb/lockstep/client"
)

// Source delivers a stream's records; the sink owns it and closes it. It has the shape of
// client.Subscription.
type Source interface {
	// Next waits for records and returns those that have arrived (at least one), in
	// offset order per partition. It returns ctx.Err() when ctx ends, and a terminal error
	// when the source cannot go on.
	Next(ctx context.Context) ([]client.Record, error)
	// Close ends the source and frees its resources.
	Close() error
}

// Origin is the sink's access to a cluster: it checks streams, opens Sources on them and
// joins consumer groups.
//
// SubscribeOrigin is the cluster's: it reads by push subscription
// (client.SubscribePartitions).
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

// checkStream is SubscribeOrigin.CheckStream.
func checkStream(ctx context.Context, cl *client.Client, stream string) (int, error) {
	desc, err := cl.Streams().Describe(ctx, stream)
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
