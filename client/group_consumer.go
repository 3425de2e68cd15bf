package client

import (
	"context"
	"errors"
	"time"

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
	// MaxRecords is the most records of one batch. Default 500.
	MaxRecords int
	// PollInterval is the pause when no owned partition has new records, in the absence
	// of a push API. Default 50 ms.
	PollInterval time.Duration
}

// Consume runs handle over the records of the member's partitions until ctx ends (it
// returns ctx.Err()), the member is out of the group (it returns Err()), or handle fails
// with another error than a fencing refusal (it returns that error). It reads records
// with ReadStream from each owned partition's committed offset, one batch per partition
// in turn, and never hands the same partition to handle from two generations: at every
// generation change it reads the assignment and the committed offsets again.
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
	if opts.PollInterval <= 0 {
		opts.PollInterval = 50 * time.Millisecond
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

// consumeGeneration consumes the partitions of one generation until it changes (nil) or
// a handle or read fails.
func (m *GroupMember) consumeGeneration(ctx context.Context, handle func(context.Context, GroupBatch) error,
	opts ConsumeOptions, changed <-chan struct{}, gen uint64, parts []int, pos map[int]uint64) error {
	idle := time.NewTimer(opts.PollInterval)
	defer idle.Stop()
	for {
		busy := false
		for _, p := range parts {
			select {
			case <-changed:
				return nil
			default:
			}
			recs, next, err := m.c.ReadStream(ctx, m.stream, p, pos[p], opts.MaxRecords)
			var trimmed *OffsetTrimmedError
			if errors.As(err, &trimmed) {
				// Retention took records nobody processed: go on from the first kept.
				pos[p] = trimmed.First
				busy = true
				continue
			}
			if err != nil {
				return err
			}
			if len(recs) == 0 {
				continue
			}
			b := GroupBatch{Generation: gen, Partition: p, Records: recs, Next: next,
				Commit: m.CommitArgs(gen, p, next)}
			if err := handle(ctx, b); err != nil {
				return err
			}
			pos[p] = next
			busy = true
		}
		if busy {
			continue
		}
		idle.Reset(opts.PollInterval)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
			return nil
		case <-idle.C:
		}
	}
}

// fenced reports whether err is the group's refusal of a member's stale view.
func fenced(err error) bool {
	return errors.Is(err, ErrStaleGeneration) || errors.Is(err, ErrNotAssigned) || errors.Is(err, ErrNotGroupMember)
}
