package client

import (
	"context"
	"fmt"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// Peer holds the calls nodes make to each other: the ReadIndex protocol's ConfirmLeader
// and ReadIndex, and a divergent node's RequestRebuild. They are not part of the
// application API and not on Client; package node is their one user. A Peer shares the
// Client's connections, Config (a node's own certificate) and limits, and is as safe for
// concurrent use. None of its calls uses the client session.
type Peer struct{ c *Client }

// NewPeer returns the node-to-node calls over c's connections. For nodes only: an
// application has no use for them.
func NewPeer(c *Client) Peer { return Peer{c} }

// ConfirmLeader is a call of nodes, for the ReadIndex protocol: it asks the node at addr
// whether it still follows the leader leaderID in Raft term term. It returns nil for yes,
// an error wrapping ErrNotLeader for no, or the error that kept the node from answering.
// One attempt, bounded by ctx and Config.RequestTimeout: a leader counts answers, it does
// not wait for retries.
func (p Peer) ConfirmLeader(ctx context.Context, addr string, term uint64, leaderID string) error {
	c := p.c
	if err := c.acquireFree(ctx); err != nil {
		return c.opErr(fmt.Errorf("client: confirm leader at %s: %w", addr, err))
	}
	defer c.releaseFree()
	if _, err := c.at(ctx, addr, &wire.Request{Op: wire.OpConfirmLeader, Term: term, LeaderID: leaderID}); err != nil {
		return c.opErr(fmt.Errorf("client: confirm leader at %s: %w", addr, err))
	}
	return nil
}

// ReadIndex is a call of nodes: it asks the leader at addr for a read index, a log index
// such that a replica that has applied it holds every write acknowledged before the call.
// One attempt, bounded by ctx and Config.RequestTimeout.
func (p Peer) ReadIndex(ctx context.Context, addr string) (uint64, error) {
	c := p.c
	if err := c.acquireFree(ctx); err != nil {
		return 0, c.opErr(fmt.Errorf("client: read index at %s: %w", addr, err))
	}
	defer c.releaseFree()
	resp, err := c.at(ctx, addr, &wire.Request{Op: wire.OpReadIndex})
	if err != nil {
		return 0, c.opErr(fmt.Errorf("client: read index at %s: %w", addr, err))
	}
	return resp.Index, nil
}

// RequestRebuild asks the leader to rebuild the divergent voter id: the leader checks that
// id reports itself divergent and that the voters alive without it make a quorum, demotes
// it to non-voter and compacts its log to a snapshot, whose index it returns (the rebuild
// point). The node then discards its state and installs that snapshot (see
// docs/operations.md, "Automatic rebuild of a divergent replica"). A divergent node calls
// it for itself; an operator has no need to. A refusal because of the quorum returns
// a *RebuildRefusedError, which matches ErrRebuildRefused and holds the leader's reason;
// asking again later is safe (a node demoted already is not demoted again).
func (p Peer) RequestRebuild(ctx context.Context, id string) (uint64, error) {
	c := p.c
	what := "rebuild " + id
	if err := c.acquireFree(ctx); err != nil {
		return 0, c.opErr(fmt.Errorf("client: %s: %w", what, err))
	}
	defer c.releaseFree()
	resp, err := c.adminCall(ctx, what, &wire.Request{Op: wire.OpRebuild, Key: []byte(id)}, true)
	switch {
	case err != nil:
		return 0, c.opErr(err)
	case resp.NextOffset == 0:
		// A refusal is an answer, not an error of the call: the reason is in Value.
		return 0, &RebuildRefusedError{ID: id, Reason: string(resp.Value)}
	}
	return resp.NextOffset, nil
}

// RebuildRefusedError is Peer.RequestRebuild's refusal. It matches ErrRebuildRefused.
type RebuildRefusedError struct {
	// ID is the node whose rebuild was refused.
	ID string
	// Reason is the leader's explanation: the quorum the demotion would break.
	Reason string
}

func (e *RebuildRefusedError) Error() string {
	return fmt.Sprintf("client: rebuild %s: %v: %s", e.ID, ErrRebuildRefused, e.Reason)
}

// Unwrap returns ErrRebuildRefused.
func (e *RebuildRefusedError) Unwrap() error { return ErrRebuildRefused }
