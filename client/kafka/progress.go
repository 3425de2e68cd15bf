package kafka

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A sink's progress record: key "<name>/<stream>/<partition>", value be64 of the
// Lockstep offset after the last record of its transaction. It is produced in the same
// Kafka transaction as those records, so a read-committed reader sees both or neither.

func progressKey(name, stream string, p int) []byte {
	return fmt.Appendf(nil, "%s/%s/%d", name, stream, p)
}

func encodeProgress(next uint64) []byte { return binary.BigEndian.AppendUint64(nil, next) }

// readProgress returns the last committed progress of stream partition p: the Lockstep
// offset to resume from (0 if none). Call it after the partition's producer took its
// transactional id (ProducerID), which completes or aborts any transaction an older
// instance left open: the partition p of the progress topic is written by that id
// alone, so its last stable offset is then its end, and every record below it is
// committed, aborted, or a control record. It reads (read-committed, keeping control
// records, which fill the offsets of aborted records' markers) up to that offset.
func (s *Sink) readProgress(ctx context.Context, p int) (uint64, error) {
	topic := s.cfg.ProgressTopic
	ends, err := committedEnds(ctx, s.cfg.Brokers, topic, s.cfg.Timeout)
	if err != nil {
		return 0, err
	}
	end, ok := ends[int32(p)]
	if !ok {
		return 0, fmt.Errorf("%w %q: no partition %d for stream partition %d", ErrProgress, topic, p, p)
	}
	if end == 0 {
		return 0, nil
	}
	kc, err := kgo.NewClient(kgo.SeedBrokers(s.cfg.Brokers...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {int32(p): kgo.NewOffset().AtStart()}}))
	if err != nil {
		return 0, configErr("kafka client: %v", err)
	}
	defer kc.Close()
	key := progressKey(s.cfg.Name, s.cfg.Stream, p)
	var next uint64
	for {
		fs := kc.PollFetches(ctx)
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if err := fetchErr(fs); err != nil {
			return 0, err
		}
		done := false
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end-1 {
				done = true
			}
			if r.Offset >= end || r.Attrs.IsControl() || string(r.Key) != string(key) {
				return
			}
			if len(r.Value) != 8 {
				bad = fmt.Errorf("%w %q: record %d/%d of %d bytes", ErrProgress, topic, p, r.Offset, len(r.Value))
				return
			}
			next = binary.BigEndian.Uint64(r.Value)
		})
		if bad != nil {
			return 0, bad
		}
		if done {
			return next, nil
		}
	}
}
