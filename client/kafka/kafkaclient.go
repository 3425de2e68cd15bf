package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// topicPartitions returns the number of partitions of topic, or ErrUnreachable or
// ErrUnknownTopic. It is the first call of a source and a sink, so a wrong broker list or
// topic name fails at once with a clear error, not in a background retry loop.
func topicPartitions(ctx context.Context, brokers []string, topic string, timeout time.Duration) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RetryTimeout(timeout))
	if err != nil {
		return 0, configErr("brokers %v: %v", brokers, err)
	}
	defer cl.Close()
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(tctx, topic)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, fmt.Errorf("%w: %v within %v: %w", ErrUnreachable, brokers, timeout, err)
	}
	td, ok := md.Topics[topic]
	switch {
	case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
		return 0, fmt.Errorf("%w %q", ErrUnknownTopic, topic)
	case td.Err != nil:
		return 0, fmt.Errorf("kafka: topic %q: %w", topic, td.Err)
	case len(td.Partitions) == 0:
		return 0, fmt.Errorf("%w %q: no partitions", ErrUnknownTopic, topic)
	}
	return len(td.Partitions), nil
}

// committedEnds returns the last stable offset of every partition of topic: the end of
// what a read-committed consumer can read.
func committedEnds(ctx context.Context, brokers []string, topic string, timeout time.Duration) (map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RetryTimeout(timeout))
	if err != nil {
		return nil, configErr("brokers %v: %v", brokers, err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("%w: %v: %w", ErrUnreachable, brokers, err)
	}
	out := map[int32]int64{}
	for _, o := range ends[topic] {
		if o.Err != nil {
			return nil, fmt.Errorf("kafka: end offset of %s/%d: %w", topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	}
	return out, nil
}
