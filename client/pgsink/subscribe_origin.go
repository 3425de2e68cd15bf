package pgsink

import (
	"context"
	"fmt"

	"github.com/lockstepdb/lockstep/client"
)

// SubscribeOrigin is an Origin on push subscriptions (client.SubscribePartitions): a node pushes
// each record as it applies it, within a credit window, and the subscription moves to
// another node without gap or duplicate when its node is lost. Nothing polls.
type SubscribeOrigin struct {
	// Client subscribes to the stream. Required.
	Client *client.Client
	// Options configure the subscription (client.WithCredit). Default: the client's.
	Options []client.SubscribeOption
}

// CheckStream implements Origin.
func (o *SubscribeOrigin) CheckStream(ctx context.Context, stream string) (int, error) {
	return checkStream(ctx, o.Client, stream)
}

// JoinGroup implements Origin.
func (o *SubscribeOrigin) JoinGroup(ctx context.Context, group, stream, member string, opts ...client.GroupOption) (*client.GroupMember, error) {
	return o.Client.JoinGroup(ctx, group, stream, member, opts...)
}

// Open implements Origin.
func (o *SubscribeOrigin) Open(ctx context.Context, stream string, partitions []int, from map[int]uint64) (Source, error) {
	sub, err := o.Client.SubscribePartitions(ctx, stream, partitions, from, o.Options...)
	if err != nil {
		return nil, streamErr(stream, err)
	}
	return &subscribeSource{sub: sub, stream: stream}, nil
}

// subscribeSource is the Source of a SubscribeOrigin.
type subscribeSource struct {
	sub    *client.Subscription
	stream string
}

// Next implements Source.
func (s *subscribeSource) Next(ctx context.Context) ([]client.Record, error) {
	recs, err := s.sub.Next(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("pgsink: subscription to %s: %w", s.stream, err)
	}
	return recs, nil
}

// Close implements Source.
func (s *subscribeSource) Close() error { return s.sub.Close() }
