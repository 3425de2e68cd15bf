package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// SourceStatus returns the lag of every partition of a source's Kafka topic: the offset
// stored in Lockstep (0 for a partition never brought in), the partition's last stable
// offset in Kafka, and the difference. It is what `lockstep source status` prints; it
// needs no running worker. It fails with ErrUnreachable, ErrUnknownTopic, or
// client.ErrUnknownGroup when no worker of the source ever joined.
func SourceStatus(ctx context.Context, cl *client.Client, brokers []string, source, topic string, timeout time.Duration) ([]PartitionLag, error) {
	if timeout <= 0 {
		timeout = DefaultSourceConfig().Timeout
	}
	n, err := topicPartitions(ctx, brokers, topic, timeout)
	if err != nil {
		return nil, err
	}
	ends, err := committedEnds(ctx, brokers, topic, timeout)
	if err != nil {
		return nil, err
	}
	offs, err := client.QueryAs[[]builtin.SourceOffset](ctx, cl, builtin.SourceOffsets, client.GroupKey(source),
		builtin.NoArgs{}, client.ReadLinearizable)
	if err != nil {
		if errors.Is(err, client.ErrUnknownGroup) {
			return nil, fmt.Errorf("kafka source %q: no worker ever joined: %w", source, err)
		}
		return nil, fmt.Errorf("kafka source %q: stored offsets: %w", source, err)
	}
	stored := map[int32]builtin.SourceOffset{}
	for _, o := range offs {
		if o.Topic == topic {
			stored[o.Partition] = o
		}
	}
	out := make([]PartitionLag, n)
	for k := range int32(n) {
		end, ok := ends[k]
		if !ok {
			end = -1
		}
		o := stored[k]
		out[k] = lagOf(topic, k, int64(o.Next), end, o.Generation)
	}
	return out, nil
}
