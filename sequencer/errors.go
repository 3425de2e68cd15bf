package sequencer

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
)

// Errors returned by the Sequencer, usually wrapped with context; test with errors.Is.
//
// Only some of them say that an input never entered the log: ErrNotLeader, ErrOverloaded,
// ErrBadProposal and ErrTooLarge always do, and so does ErrShutdown unless it also matches
// ErrLeadershipLost. Every other error from a proposal means the outcome is unknown: the
// entry may still be committed, so the caller must retry with the same session and
// sequence number and never report the input as failed (RAFT-NOTES trap 1, hashicorp/raft
// PR 561; DESIGN.md invariant 3).
var (
	// ErrNotLeader is returned when this node is not the Raft leader. The proposal never
	// entered the log; the caller answers the client with Leader's address.
	ErrNotLeader = errors.New("sequencer: not the leader")
	// ErrOverloaded is returned by Submit when Config.MaxQueuedInputs inputs are already
	// queued. The proposal never entered the log; the client may retry later.
	ErrOverloaded = errors.New("sequencer: overloaded, too many queued inputs")
	// ErrShutdown is returned after Close. Alone it means the proposal never entered the
	// log. Should Raft stop under a proposal it had already given a log index (Close
	// waits for those, so this is defensive), the error matches ErrLeadershipLost too:
	// the entry may still commit.
	ErrShutdown = errors.New("sequencer: shut down")
	// ErrBadConfig is returned by Config.Validate and Open for an unusable Config.
	ErrBadConfig = errors.New("sequencer: bad config")
	// ErrLeadershipLost means the outcome is unknown: the entry may or may not commit
	// under a later leader. Retry with the same session and sequence number; the
	// replicas' session dedup returns the original result if the first attempt committed.
	ErrLeadershipLost = errors.New("sequencer: leadership lost, outcome unknown, retry with the same session and sequence number")
	// ErrTimeout is returned when a context ends before a Raft operation finished (Barrier,
	// VerifyLeader, membership changes). The operation may still take effect.
	ErrTimeout = errors.New("sequencer: timed out")
	// ErrBadProposal is returned by Submit for a proposal that cannot be put in a valid log
	// entry (nil proposal or Done, scope out of range). Nothing was proposed.
	ErrBadProposal = errors.New("sequencer: bad proposal")
	// ErrTooLarge is returned by Submit for an item whose encoding cannot fit in one log
	// entry of Config.MaxBatchBytes. Nothing was proposed.
	ErrTooLarge = errors.New("sequencer: item too large for one log entry")
	// ErrBadResponse is given to Done when the FSM returned something other than a
	// *batch.Results with one result per item. The entry is committed; the result is
	// lost, so a retry with the same session and sequence number fetches it.
	ErrBadResponse = errors.New("sequencer: FSM returned a bad response")
	// ErrUnknownServer is returned by TransferLeadership for an id that is not a voter, and
	// by Promote for an id no longer in the configuration.
	ErrUnknownServer = errors.New("sequencer: unknown server")
)

// applyError translates the error of a raft.ApplyFuture for a batch. dispatched says
// whether the leader gave the entry a log index (the future's Index is non-zero), after
// which even a shutdown cannot tell whether the entry commits.
func applyError(err error, dispatched bool) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		// Refused by a non-leader loop or by a stepping-down leader before dispatch.
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	case errors.Is(err, raft.ErrRaftShutdown) && !dispatched:
		return fmt.Errorf("%w: %w", ErrShutdown, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: %w: %w", ErrShutdown, ErrLeadershipLost, err)
	default:
		// raft.ErrLeadershipLost, ErrLeadershipTransferInProgress, ErrEnqueueTimeout and
		// anything unexpected (a failed local log write): the outcome is unknown.
		return fmt.Errorf("%w: %w", ErrLeadershipLost, err)
	}
}

// opError translates the error of a Raft operation that is not a batch (Barrier,
// VerifyLeader, membership changes, snapshots).
func opError(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader):
		return fmt.Errorf("sequencer: %s: %w: %w", op, ErrNotLeader, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("sequencer: %s: %w: %w", op, ErrShutdown, err)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("sequencer: %s: %w: %w", op, ErrTimeout, err)
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("sequencer: %s: %w: %w", op, ErrLeadershipLost, err)
	case errors.Is(err, ErrTimeout), errors.Is(err, ErrShutdown):
		return fmt.Errorf("sequencer: %s: %w", op, err)
	default:
		return fmt.Errorf("sequencer: %s: %w", op, err)
	}
}
