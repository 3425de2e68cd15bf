package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/planted"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Sink copies a Lockstep stream into a Kafka topic, exactly once: each stream partition
// is written by its own transactional producer (transactional id "<Name>-<p>"), and
// every transaction carries, besides the records, a progress record holding the
// Lockstep offset after them (docs/sinks.md, "Kafka"). A (re)started instance takes the
// transactional id first — which fences an older instance and aborts its open
// transaction — then resumes from the last committed progress record.
type Sink struct {
	cfg SinkConfig
	cl  *client.Client
}

// Headers of every record the sink writes: where in Lockstep it came from.
const (
	HeaderStream    = "lockstep-stream"
	HeaderPartition = "lockstep-partition"
	HeaderOffset    = "lockstep-offset"
)

// NewSink returns a sink; Run starts it. It fails with ErrConfig.
func NewSink(cl *client.Client, cfg SinkConfig) (*Sink, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Sink{cfg: cfg, cl: cl}, nil
}

// Run copies records until ctx ends (then nil) or a partition fails, which stops them
// all: ErrUnreachable, ErrUnknownTopic, ErrUnknownStream, ErrProgress, ErrTrimmed, or
// ErrFenced when a newer instance took one of its partitions.
func (s *Sink) Run(ctx context.Context) error {
	err := s.run(ctx)
	if ctx.Err() != nil {
		return nil // stopped, wherever it was
	}
	return err
}

func (s *Sink) run(ctx context.Context) error {
	n, err := topicPartitions(ctx, s.cfg.Brokers, s.cfg.Topic, s.cfg.Timeout)
	if err != nil {
		return fmt.Errorf("kafka sink %q: %w", s.cfg.Name, err)
	}
	np, err := topicPartitions(ctx, s.cfg.Brokers, s.cfg.ProgressTopic, s.cfg.Timeout)
	if err != nil {
		return fmt.Errorf("kafka sink %q: progress topic: %w", s.cfg.Name, err)
	}
	desc, err := s.cl.Streams().Describe(ctx, s.cfg.Stream)
	if errors.Is(err, client.ErrUnknownStream) {
		return fmt.Errorf("kafka sink %q: %w %q: %w", s.cfg.Name, ErrUnknownStream, s.cfg.Stream, err)
	}
	if err != nil {
		return fmt.Errorf("kafka sink %q: stream %q: %w", s.cfg.Name, s.cfg.Stream, err)
	}
	parts := s.cfg.Partitions
	if len(parts) == 0 {
		for p := range desc.Partitions {
			parts = append(parts, p)
		}
	}
	for _, p := range parts {
		switch {
		case p >= len(desc.Partitions):
			return fmt.Errorf("kafka sink %q: %w: stream %q has no partition %d", s.cfg.Name, ErrConfig, s.cfg.Stream, p)
		case p >= np:
			return fmt.Errorf("kafka sink %q: %w %q: %d partitions, stream partition %d needs one of its own", s.cfg.Name, ErrProgress, s.cfg.ProgressTopic, np, p)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(parts))
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.runPartition(ctx, p, n); err != nil && ctx.Err() == nil {
				errs[i] = fmt.Errorf("kafka sink %q, stream partition %d: %w", s.cfg.Name, p, err)
				s.cfg.Logger.Error("kafka sink partition failed", "sink", s.cfg.Name, "partition", p, "err", err)
				cancel() // one failure stops the instance: its operator restarts it whole
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// maxRestarts is how many times in a row a partition restarts after a transaction the
// broker refused for a reason other than a fence, with no commit in between.
const maxRestarts = 5

// runPartition copies stream partition p into Kafka partition p mod n. A transaction
// the broker refused for a transient reason (INVALID_TXN_STATE, CONCURRENT_TRANSACTIONS,
// a retriable error) restarts the partition, but only while the broker still names this
// instance's producer as the transactional id's (stillOwner): a new producer takes the
// id, which aborts whatever the refused transaction left open, and resumes from the last
// committed progress, so nothing is doubled or skipped. A zombie refused after a newer
// instance took the id stops fenced instead of taking it back.
func (s *Sink) runPartition(ctx context.Context, p, n int) error {
	for restarts := 0; ; restarts++ {
		committed, err := s.runProducer(ctx, p, n)
		if committed {
			restarts = 0
		}
		if !restartable(err) || restarts >= maxRestarts || ctx.Err() != nil {
			return err
		}
		s.cfg.Logger.Warn("kafka sink partition restarts", "sink", s.cfg.Name, "partition", p, "err", err)
		select {
		case <-time.After(time.Duration(100<<restarts) * time.Millisecond):
		case <-ctx.Done():
			return nil
		}
	}
}

// restartable reports whether err is a broker's refusal of a transaction that a new
// producer of the same transactional id gets past.
func restartable(err error) bool {
	var ke *kerr.Error
	var u unrestartable
	switch {
	case err == nil, errors.Is(err, ErrFenced), errors.Is(err, ErrUnknownTopic), errors.As(err, &u):
		return false
	case errors.Is(err, kerr.InvalidTxnState), errors.Is(err, kerr.ConcurrentTransactions):
		return true
	}
	return errors.As(err, &ke) && ke.Retriable
}

// runProducer copies partition p with one producer until an error; committed reports
// whether at least one transaction committed. A restartable error is returned only if
// this producer still holds the transactional id; otherwise the error is ErrFenced.
func (s *Sink) runProducer(ctx context.Context, p, n int) (committed bool, err error) {
	txnID := s.cfg.Name + "-" + strconv.Itoa(p)
	kc, err := kgo.NewClient(kgo.SeedBrokers(s.cfg.Brokers...),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(s.cfg.TransactionTimeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxVersions(transactionsV1()))
	if err != nil {
		return false, configErr("kafka client: %v", err)
	}
	defer kc.Close()
	// Take the transactional id before reading the progress: the broker fences every
	// older producer of it and ends the transaction one left open.
	id, epoch, err := kc.ProducerID(ctx)
	if err != nil {
		return false, produceErr(err)
	}
	if s.cfg.afterInit != nil {
		s.cfg.afterInit(p)
	}
	defer func() {
		if restartable(err) && ctx.Err() == nil {
			err = s.stillOwner(ctx, kc, txnID, id, epoch, err)
		}
	}()
	next, err := s.readProgress(ctx, p)
	if err != nil {
		return false, err
	}
	s.cfg.Logger.Info("kafka sink partition resumes", "sink", s.cfg.Name, "partition", p, "offset", next)
	sub, err := s.cl.Subscribe(ctx, s.cfg.Stream, p, next)
	if err != nil {
		return false, s.streamErr(err)
	}
	defer sub.Close()
	for {
		recs, err := sub.Next(ctx)
		if err != nil {
			return committed, s.streamErr(err)
		}
		for len(recs) > 0 {
			m := min(len(recs), s.cfg.BatchRecords)
			if err := s.transact(ctx, kc, p, n, recs[:m]); err != nil {
				return committed, err
			}
			committed = true
			recs = recs[m:]
		}
	}
}

func (s *Sink) streamErr(err error) error {
	var trimmed *client.OffsetTrimmedError
	switch {
	case errors.As(err, &trimmed):
		return fmt.Errorf("%w: %w", ErrTrimmed, err)
	case errors.Is(err, client.ErrUnknownStream):
		return fmt.Errorf("%w %q: %w", ErrUnknownStream, s.cfg.Stream, err)
	}
	return err
}

// transact writes recs (of stream partition p, consecutive) and the progress past them
// in one Kafka transaction.
func (s *Sink) transact(ctx context.Context, kc *kgo.Client, p, n int, recs []client.Record) error {
	next := recs[len(recs)-1].Offset + 1
	progress := &kgo.Record{Topic: s.cfg.ProgressTopic, Partition: int32(p),
		Key: progressKey(s.cfg.Name, s.cfg.Stream, p), Value: encodeProgress(next)}
	if planted.KafkaSplitStep {
		progress = nil // stored in a transaction of its own below: the planted bug
	}
	if err := s.produce(ctx, kc, p, n, recs, progress); err != nil {
		return err
	}
	if s.cfg.afterCommit != nil {
		s.cfg.afterCommit(p, next)
	}
	if planted.KafkaSplitStep {
		return s.produce(ctx, kc, p, n, nil, &kgo.Record{Topic: s.cfg.ProgressTopic, Partition: int32(p),
			Key: progressKey(s.cfg.Name, s.cfg.Stream, p), Value: encodeProgress(next)})
	}
	return nil
}

// produce runs one transaction of recs and progress (either may be empty).
func (s *Sink) produce(ctx context.Context, kc *kgo.Client, p, n int, recs []client.Record, progress *kgo.Record) error {
	if err := kc.BeginTransaction(); err != nil {
		return produceErr(err)
	}
	var mu sync.Mutex
	var first error
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			first = cmpOr(first, err)
			mu.Unlock()
		}
	}
	part := []byte(strconv.Itoa(p))
	for _, r := range recs {
		kc.Produce(ctx, &kgo.Record{Topic: s.cfg.Topic, Partition: int32(p % n), Key: r.Key, Value: r.Data,
			Timestamp: r.EventTime, Headers: []kgo.RecordHeader{
				{Key: HeaderStream, Value: []byte(s.cfg.Stream)},
				{Key: HeaderPartition, Value: part},
				{Key: HeaderOffset, Value: strconv.AppendUint(nil, r.Offset, 10)},
			}}, done)
	}
	if progress != nil {
		kc.Produce(ctx, progress, done)
	}
	err := kc.Flush(ctx)
	mu.Lock()
	err = cmpOr(first, err)
	mu.Unlock()
	if s.cfg.beforeCommit != nil {
		s.cfg.beforeCommit(p)
	}
	commit := kgo.TransactionEndTry(err == nil)
	if eerr := kc.EndTransaction(ctx, commit); eerr != nil && err == nil {
		err = eerr
	}
	if err != nil {
		return produceErr(err)
	}
	return nil
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// produceErr translates a producer's error: a fence becomes ErrFenced.
func produceErr(err error) error {
	switch {
	case errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.InvalidProducerEpoch),
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed), errors.Is(err, kerr.InvalidProducerIDMapping):
		return fmt.Errorf("%w: %w", ErrFenced, err)
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return fmt.Errorf("%w: %w", ErrUnknownTopic, err)
	}
	return fmt.Errorf("kafka: produce: %w", err)
}
