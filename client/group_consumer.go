package client

import (
	"context"
	"errors"

	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// GroupBatch is one batch of records of a partition the member owns, handed to the
// function Consume runs.
type GroupBatch struct {
	// Generation is the group generation the batch was read in.
	Generation uint64
	// Partition is the stream partition.
	Partition int
	// Records are the records from the partition's committed offset on, in offset order.
	Records []Record
	// Next is the offset after the last record: the offset to commit once the batch is
	// processed.
	Next uint64
	// Commit commits Next for Partition in Generation: pass it to a procedure that calls
	// procedures.CommitGroupOffset in the same step as its writes (exactly once), or to
	// an invocation of group.commit after processing (at least once).
	Commit builtin.GroupCommitArgs
}

// ConsumeOptions bound Consume. Zero fields get their defaults.
type ConsumeOptions struct {
	// MaxRecords is the most records of one batch, and the credit window of the
	// subscription to each owned partition (WithCredit). Default 500.
	MaxRecords int
	// MaxBytes is the credit window of each owned partition in bytes (WithCredit).
	// Default DefaultSubscribeCreditBytes.
	MaxBytes int
}

// Consume runs handle over the records of the member's partitions until ctx ends (it
// returns ctx.Err()), the member is out of the group (it returns Err()), or handle fails
// with another error than a fencing refusal (it returns that error). Records are pushed:
// for each generation it subscribes to the member's partitions (SubscribePartitions),
// each from its committed offset, and hands handle one batch per partition as records
// arrive. At every generation change it drops what it has not handed out, closes the
// subscription and subscribes again from the committed offsets, so it never hands the
// same partition to handle from two generations, and within a generation each
// partition's batches follow one another without gap or overlap. A committed offset that
// retention has trimmed goes on from the first retained record.
//
// handle must commit b.Commit when it has processed the batch. When it does so in the
// same procedure invocation as its writes (procedures.CommitGroupOffset), every record
// has its effect exactly once, whatever members join, leave, stall or die: a batch read
// in an old generation is refused as a whole (ErrStaleGeneration, ErrNotAssigned,
// ErrNotGroupMember), and Consume then heartbeats and starts over from the committed
// offsets. It never returns nil.
func (m *GroupMember) Consume(ctx context.Context, handle func(context.Context, GroupBatch) error, opts ConsumeOptions) error {
	if opts.MaxRecords <= 0 {
		opts.MaxRecords = 500
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultSubscribeCreditBytes
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := m.Err(); err != nil {
			return err
		}
		changed := m.Changed()
		gen, parts := m.Current()
		offs, err := m.CommittedOffsets(ctx)
		if err != nil {
			return err
		}
		if err := m.consumeGeneration(ctx, handle, opts, changed, gen, parts, offs); err != nil {
			if !fenced(err) {
				return err
			}
			// The group moved on: learn the new generation before reading again.
			if herr := m.Heartbeat(ctx); herr != nil && !fenced(herr) && ctx.Err() == nil {
				m.c.cfg.Logger.Warn("group heartbeat failed", "group", m.group, "member", m.member, "err", herr)
			}
		}
	}
}

// consumeGeneration consumes the partitions of one generation, from pos, until it
// changes (nil) or a handle or the subscription fails.
func (m *GroupMember) consumeGeneration(ctx context.Context, handle func(context.Context, GroupBatch) error,
	opts ConsumeOptions, changed <-chan struct{}, gen uint64, parts []int, pos map[int]uint64) error {
	if len(parts) == 0 {
		select { // more members than partitions: idle until the next rebalance
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
			return nil
		}
	}
	from := make(map[int]uint64, len(parts))
	for _, p := range parts {
		if off, ok := pos[p]; ok {
			from[p] = off
		}
	}
	// gctx ends at the generation's change, which wakes a waiting Next; the watcher
	// goroutine is this function's, and ends with it.
	gctx, cancel := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-changed:
			cancel()
		case <-gctx.Done():
		}
	}()
	defer func() { cancel(); <-watched }()
	for {
		sub, err := m.c.SubscribePartitions(gctx, m.stream, parts, from, WithCredit(opts.MaxRecords, opts.MaxBytes))
		if err == nil {
			err = m.handleSubscription(ctx, gctx, sub, handle, gen, from)
			sub.Close()
		}
		var trimmed *OffsetTrimmedError
		switch {
		case errors.As(err, &trimmed):
			// Retention took records nobody processed: go on from the first kept.
			from[trimmed.Partition] = trimmed.First
		case errors.Is(err, context.Canceled) && gctx.Err() != nil && ctx.Err() == nil:
			return nil // the generation changed
		default:
			return err
		}
	}
}

// handleSubscription hands the records of sub to handle (called with ctx), one batch per
// partition, and moves from past each batch handled. It returns when sub or handle fails
// or gctx, the generation's context, ends.
func (m *GroupMember) handleSubscription(ctx, gctx context.Context, sub *Subscription, handle func(context.Context, GroupBatch) error,
	gen uint64, from map[int]uint64) error {
	for {
		recs, err := sub.Next(gctx)
		if err != nil {
			return err
		}
		// At most a credit window (MaxRecords) of each partition.
		for batch := range PartitionRuns(recs) {
			if err := gctx.Err(); err != nil {
				return err // the generation changed: hand nothing more out
			}
			p, next := batch[0].Partition, batch[len(batch)-1].Offset+1
			b := GroupBatch{Generation: gen, Partition: p, Records: batch, Next: next,
				Commit: m.CommitArgs(gen, p, next)}
			if err := handle(ctx, b); err != nil {
				return err
			}
			from[p] = next
		}
	}
}

// fenced reports whether err is the group's refusal of a member's stale view.
func fenced(err error) bool {
	return errors.Is(err, ErrStaleGeneration) || errors.Is(err, ErrNotAssigned) || errors.Is(err, ErrNotGroupMember)
}
