package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/planted"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vmihailenco/msgpack/v5"
)

// Source is one worker of a Kafka source: it joins the source's consumer group, reads the
// Kafka partitions assigned to it (read-committed) from the offsets stored in Lockstep,
// and appends each batch with its next offset through source.append — one exactly-once
// step, refused if the worker's generation is stale or the stored offset moved. Run it
// in as many processes as wanted; the group shares the partitions among them.
type Source struct {
	cfg SourceConfig
	cl  *client.Client

	mu  sync.Mutex
	lag map[int32]PartitionLag // the owned partitions, as last seen
}

// PartitionLag is the progress of one Kafka partition of a source.
type PartitionLag struct {
	// Topic and Partition name the Kafka partition.
	Topic     string
	Partition int32
	// Next is the Kafka offset of the next record to bring in, as stored in Lockstep.
	Next int64
	// End is the partition's last stable offset (the end of its committed records), as
	// last seen; -1 if unknown.
	End int64
	// Lag is End - Next (0 when End is unknown): the committed records not brought in.
	Lag int64
	// Generation is the group generation of the batch that stored Next.
	Generation uint64
}

// errChanged ends the consumption of one generation: the assignment changed.
var errChanged = errors.New("kafka: group assignment changed")

// NewSource returns a worker; Run starts it. It fails with ErrConfig.
func NewSource(cl *client.Client, cfg SourceConfig) (*Source, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Source{cfg: cfg, cl: cl, lag: map[int32]PartitionLag{}}, nil
}

// Status returns the worker's partitions and their lag, by partition.
func (s *Source) Status() []PartitionLag {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PartitionLag, 0, len(s.lag))
	for _, l := range s.lag {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b PartitionLag) int { return int(a.Partition - b.Partition) })
	return out
}

// Run brings records in until ctx ends (then it leaves the group and returns nil) or a
// failure that a restart cannot cure by itself: ErrUnreachable, ErrUnknownTopic,
// ErrUnknownStream at start, ErrOffsetOutOfRange, the group's removal of the member
// (client.ErrNotGroupMember, its session timed out), or a Lockstep error. A stale
// generation or a moved offset (another worker took over) is no failure: the worker
// reads its assignment and the stored offsets again and goes on.
func (s *Source) Run(ctx context.Context) error {
	err := s.run(ctx)
	if ctx.Err() != nil {
		return nil // stopped, wherever it was
	}
	return err
}

func (s *Source) run(ctx context.Context) error {
	kparts, err := topicPartitions(ctx, s.cfg.Brokers, s.cfg.Topic, s.cfg.Timeout)
	if err != nil {
		return fmt.Errorf("kafka source %q: %w", s.cfg.Name, err)
	}
	parts, err := s.checkStream(ctx, s.cfg.Stream)
	if err != nil {
		return err
	}
	if _, err := s.checkStream(ctx, s.cfg.DeadLetter); err != nil {
		return err
	}
	m, err := s.cl.JoinGroup(ctx, s.cfg.Name, s.cfg.Stream, s.cfg.Member, client.WithSessionTimeout(s.cfg.SessionTimeout))
	if err != nil {
		return fmt.Errorf("kafka source %q: join: %w", s.cfg.Name, err)
	}
	defer func() {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.Timeout)
		defer cancel()
		_ = m.Leave(lctx) // best effort: otherwise the session times out
	}()
	s.cfg.Logger.Info("kafka source joined", "source", s.cfg.Name, "member", s.cfg.Member, "topic", s.cfg.Topic,
		"kafka_partitions", kparts, "generation", m.Generation())
	for {
		changed := m.Changed()
		if err := m.Err(); err != nil {
			return fmt.Errorf("kafka source %q, member %q: %w", s.cfg.Name, s.cfg.Member, err)
		}
		gen, assigned := m.Current()
		owned := ownedPartitions(kparts, parts, assigned)
		err := s.consume(ctx, gen, owned, changed)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errChanged):
		case fenced(err):
			s.cfg.Logger.Info("kafka source fenced, reading its assignment again", "source", s.cfg.Name, "member", s.cfg.Member, "err", err)
			if err := m.Heartbeat(ctx); err != nil && ctx.Err() == nil && !fenced(err) {
				return fmt.Errorf("kafka source %q: heartbeat: %w", s.cfg.Name, err)
			}
		default:
			return fmt.Errorf("kafka source %q: %w", s.cfg.Name, err)
		}
	}
}

func (s *Source) checkStream(ctx context.Context, stream string) (int, error) {
	desc, err := s.cl.Streams().Describe(ctx, stream)
	if errors.Is(err, client.ErrUnknownStream) {
		return 0, fmt.Errorf("kafka source %q: %w %q: %w", s.cfg.Name, ErrUnknownStream, stream, err)
	}
	if err != nil {
		return 0, fmt.Errorf("kafka source %q: stream %q: %w", s.cfg.Name, stream, err)
	}
	return len(desc.Partitions), nil
}

// ownedPartitions returns the Kafka partitions of kparts whose number mod parts (the
// Lockstep partitions) is among the group partitions assigned: the rule source.append
// checks.
func ownedPartitions(kparts, parts int, assigned []int) []int32 {
	var out []int32
	for k := 0; k < kparts; k++ {
		if slices.Contains(assigned, k%parts) {
			out = append(out, int32(k))
		}
	}
	return out
}

// fenced reports whether err is a fence of source.append: a newer generation, a lost
// assignment, or a stored offset that moved (ErrSourceOffset is a StaleGeneration).
func fenced(err error) bool {
	return errors.Is(err, client.ErrStaleGeneration) || errors.Is(err, client.ErrNotAssigned) ||
		errors.Is(err, client.ErrNotGroupMember)
}

// offsets reads the stored offsets of the source's topic, linearizably.
func (s *Source) offsets(ctx context.Context) (map[int32]builtin.SourceOffset, error) {
	offs, err := client.QueryAs[[]builtin.SourceOffset](ctx, s.cl, builtin.SourceOffsets, client.GroupKey(s.cfg.Name),
		builtin.NoArgs{}, client.ReadLinearizable)
	if err != nil {
		return nil, fmt.Errorf("stored offsets: %w", err)
	}
	out := map[int32]builtin.SourceOffset{}
	for _, o := range offs {
		if o.Topic == s.cfg.Topic {
			out[o.Partition] = o
		}
	}
	return out, nil
}

// consume reads the owned partitions in generation gen until changed fires (errChanged),
// ctx ends, a batch is fenced, or a failure.
func (s *Source) consume(ctx context.Context, gen uint64, owned []int32, changed <-chan struct{}) error {
	s.mu.Lock()
	clear(s.lag)
	s.mu.Unlock()
	if len(owned) == 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
			return errChanged
		}
	}
	stored, err := s.offsets(ctx)
	if err != nil {
		return err
	}
	next := map[int32]int64{}
	start := map[int32]kgo.Offset{}
	for _, k := range owned {
		n := int64(stored[k].Next)
		next[k] = n
		if n == 0 {
			start[k] = kgo.NewOffset().AtStart()
		} else {
			start[k] = kgo.NewOffset().At(n)
		}
		s.setLag(k, n, -1, stored[k].Generation)
	}
	kc, err := kgo.NewClient(kgo.SeedBrokers(s.cfg.Brokers...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), // so the stored offset moves past transaction markers: lag 0 at the end
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.cfg.Topic: start}),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()))
	if err != nil {
		return configErr("kafka client: %v", err)
	}
	defer kc.Close()
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // ends with pctx, which consume cancels on return
		select {
		case <-changed:
			cancel()
		case <-pctx.Done():
		}
	}()
	for {
		fs := kc.PollRecords(pctx, 4*s.cfg.BatchRecords)
		if pctx.Err() != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return errChanged
		}
		if err := fetchErr(fs); err != nil {
			return err
		}
		var order []int32
		recs := map[int32][]*kgo.Record{}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if _, ok := recs[p.Partition]; !ok {
				order = append(order, p.Partition)
			}
			recs[p.Partition] = append(recs[p.Partition], p.Records...)
			s.setEnd(p.Partition, p.LastStableOffset)
		})
		for _, k := range order {
			if err := s.bring(pctx, gen, k, recs[k], next); err != nil {
				if pctx.Err() != nil && ctx.Err() == nil {
					return errChanged
				}
				return err
			}
		}
	}
}

// fetchErr returns the first error of a poll, translated.
func fetchErr(fs kgo.Fetches) error {
	var out error
	fs.EachError(func(topic string, p int32, err error) {
		if out != nil {
			return
		}
		switch {
		case errors.Is(err, kerr.OffsetOutOfRange):
			out = fmt.Errorf("%w: %s/%d: %w", ErrOffsetOutOfRange, topic, p, err)
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			out = fmt.Errorf("%w %q (partition %d): %w", ErrUnknownTopic, topic, p, err)
		default:
			out = fmt.Errorf("kafka: fetch %s/%d: %w", topic, p, err)
		}
	})
	return out
}

// bring appends recs, the next records of Kafka partition k in offset order, in batches,
// each through one source.append from next[k], which it advances.
func (s *Source) bring(ctx context.Context, gen uint64, k int32, recs []*kgo.Record, next map[int32]int64) error {
	for len(recs) > 0 {
		args := builtin.SourceAppendArgs{Member: s.cfg.Member, Generation: gen, Topic: s.cfg.Topic, Partition: k,
			From: uint64(next[k]), DeadLetter: s.cfg.DeadLetter}
		size := 0
		n := 0
		for ; n < len(recs) && n < s.cfg.BatchRecords; n++ {
			r := recs[n]
			if n > 0 && size+len(r.Key)+len(r.Value) > s.cfg.BatchBytes {
				break
			}
			if r.Attrs.IsControl() {
				continue // a transaction marker: no record, but the offset after it counts
			}
			size += len(r.Key) + len(r.Value)
			rec, dead := s.convert(r)
			if dead != nil {
				args.Dead = append(args.Dead, *dead)
			} else {
				args.Records = append(args.Records, rec)
			}
		}
		args.Next = uint64(recs[n-1].Offset + 1)
		if s.cfg.beforeAppend != nil {
			s.cfg.beforeAppend(k)
		}
		if err := s.appendBatch(ctx, &args); err != nil {
			return fmt.Errorf("%s/%d from offset %d: %w", s.cfg.Topic, k, args.From, err)
		}
		s.cfg.Logger.Debug("kafka source batch", "source", s.cfg.Name, "partition", k, "from", args.From, "next", args.Next,
			"records", len(args.Records), "dead", len(args.Dead), "generation", gen)
		next[k] = int64(args.Next)
		s.setNext(k, next[k], gen)
		if s.cfg.afterAppend != nil {
			s.cfg.afterAppend(k, next[k])
		}
		recs = recs[n:]
	}
	return nil
}

// appendBatch is the exactly-once step: one source.append.
func (s *Source) appendBatch(ctx context.Context, args *builtin.SourceAppendArgs) error {
	if planted.KafkaSplitStep {
		return s.appendSplit(ctx, args)
	}
	var next uint64
	return s.cl.Invoke(ctx, builtin.SourceAppend, client.GroupKey(s.cfg.Name), args, &next)
}

// appendSplit is the planted bug of lockstep_kafka_splitstep: the records are appended
// in one step, unfenced (a source.append with Next = From, which the planted build's
// procedure takes as "append only, check nothing": procedures/source_planted.go), and the
// offset stored in a second one — the at-least-once connector. A worker killed between
// the two steps, or a zombie, doubles records.
func (s *Source) appendSplit(ctx context.Context, args *builtin.SourceAppendArgs) error {
	if len(args.Records) > 0 {
		recordsOnly := *args
		recordsOnly.Next, recordsOnly.Dead = args.From, nil
		var next uint64
		if err := s.cl.Invoke(ctx, builtin.SourceAppend, client.GroupKey(s.cfg.Name), &recordsOnly, &next); err != nil {
			return err
		}
		if s.cfg.afterAppend != nil {
			s.cfg.afterAppend(args.Partition, -1)
		}
		if err := ctx.Err(); err != nil {
			return err // killed between the two steps
		}
	}
	offsetOnly := *args
	offsetOnly.Records = nil
	var next uint64
	return s.cl.Invoke(ctx, builtin.SourceAppend, client.GroupKey(s.cfg.Name), &offsetOnly, &next)
}

// convert turns a Kafka record into a Lockstep record, or into a dead letter with the
// reason.
func (s *Source) convert(r *kgo.Record) (builtin.SourceRecord, *builtin.SourceRecord) {
	ms := r.Timestamp.UnixMilli()
	if r.Timestamp.IsZero() || ms < 0 {
		ms = 0
	}
	key := r.Key
	if len(key) == 0 {
		key = fmt.Appendf(nil, "%s/%d", r.Topic, r.Partition)
	}
	var value []byte
	var err error
	if s.cfg.Decoder != nil {
		k, v, et, derr := s.cfg.Decoder.Decode(r.Key, r.Value, ms)
		if err = derr; err == nil {
			value = v
			if len(k) > 0 {
				key = k
			}
			if et > 0 {
				ms = et
			}
		}
	} else {
		value, err = s.cfg.Format.decode(r.Value)
	}
	if err == nil && len(value) > maxValueBytes {
		err = fmt.Errorf("%w: value of %d bytes, limit %d", errMalformed, len(value), maxValueBytes)
	}
	if err == nil && len(key) > maxKeyBytes {
		err = fmt.Errorf("%w: key of %d bytes, limit %d", errMalformed, len(key), maxKeyBytes)
	}
	if err == nil {
		return builtin.SourceRecord{Key: key, Value: value, EventTime: ms}, nil
	}
	d := DeadLetter{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Reason: err.Error(),
		Key: r.Key, Value: r.Value, TimestampMs: ms}
	if len(d.Key) > maxKeyBytes {
		d.Key = d.Key[:maxKeyBytes]
	}
	if len(d.Value) > maxValueBytes/2 {
		d.Value = d.Value[:maxValueBytes/2] // the reason says how long it was
	}
	v, merr := msgpack.Marshal(&d)
	if merr != nil {
		v = []byte(d.Reason)
	}
	return builtin.SourceRecord{}, &builtin.SourceRecord{Key: fmt.Appendf(nil, "%s/%d/%d", r.Topic, r.Partition, r.Offset),
		Value: v, EventTime: ms}
}

func (s *Source) setLag(k int32, next, end int64, gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lag[k] = lagOf(s.cfg.Topic, k, next, end, gen)
}

func (s *Source) setNext(k int32, next int64, gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lag[k] = lagOf(s.cfg.Topic, k, next, s.lag[k].End, gen)
}

func (s *Source) setEnd(k int32, end int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lag[k]
	s.lag[k] = lagOf(s.cfg.Topic, k, l.Next, end, l.Generation)
}

func lagOf(topic string, k int32, next, end int64, gen uint64) PartitionLag {
	l := PartitionLag{Topic: topic, Partition: k, Next: next, End: end, Generation: gen}
	if end >= 0 && end > next {
		l.Lag = end - next
	}
	return l
}
