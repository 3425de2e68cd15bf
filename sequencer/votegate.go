package sequencer

// The vote gate keeps a node out of elections while it may not have the log it claims.
// A Raft voter that lost its log (a wiped or replaced data directory under an old
// identity) still believes it is a voter once the configuration reaches it, and grants
// its vote to any candidate: its empty log never looks more up to date than the
// candidate's. Such a vote can elect a leader that lacks committed entries (Raft's safety
// argument assumes a voter never forgets its log). A node whose owner cannot yet vouch for
// its log opens the Sequencer with Config.HoldVotes: every RequestVote and RequestPreVote
// it receives is answered "not granted" without reaching Raft, as if the node were down,
// until the owner calls AllowVotes. Replication (AppendEntries, InstallSnapshot,
// heartbeats) passes through: the node still receives the log.
//
// One exception keeps a new cluster able to elect its first leader when its nodes are
// bootstrapped from one of them (the others, with new data directories, hold their votes
// until the log they receive names them): a candidate whose log ends at index 1 or
// before, a bootstrap configuration at most, gets the vote through to Raft. Nothing can
// have been committed by such a candidate's cluster but that configuration, so a node that
// forgot its log cannot hand it a history it lacks — unless a majority lost theirs too,
// which no Raft cluster survives.

import (
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// voteGate wraps a transport and answers vote requests itself while held.
type voteGate struct {
	raft.Transport
	held    atomic.Bool
	refused atomic.Uint64
	out     chan raft.RPC
	stop    chan struct{}
	wg      sync.WaitGroup

	// hbMu is held shared by every heartbeat Raft handles on the transport's goroutine
	// (SetHeartbeatHandler's fast path, which bypasses Raft's loop), and exclusively by
	// stopGate: Raft's Shutdown does not wait for such a heartbeat, which then writes the
	// term to a stable store closed under it, and Raft panics ("failed to save current
	// term: closed"). After stopGate, heartbeats are refused.
	hbMu     sync.RWMutex
	hbClosed bool
}

// freshLogIndex is the last index of a candidate whose log holds at most a bootstrap
// configuration; its vote requests pass the gate.
const freshLogIndex = 1

// newVoteGate starts the gate's forwarding goroutine; stopGate ends it.
func newVoteGate(t raft.Transport, held bool) *voteGate {
	g := &voteGate{Transport: t, out: make(chan raft.RPC), stop: make(chan struct{})}
	g.held.Store(held)
	g.wg.Add(1)
	go g.forward()
	return g
}

// Consumer implements raft.Transport: the RPCs that pass the gate.
func (g *voteGate) Consumer() <-chan raft.RPC { return g.out }

// forward passes every RPC of the wrapped transport to Raft, but answers vote requests
// with "not granted" while the gate is held.
func (g *voteGate) forward() {
	defer g.wg.Done()
	in := g.Transport.Consumer()
	for {
		select {
		case <-g.stop:
			return
		case rpc := <-in:
			if g.held.Load() && g.refuse(rpc) {
				continue
			}
			select {
			case g.out <- rpc:
			case <-g.stop:
				rpc.Respond(nil, raft.ErrRaftShutdown)
				return
			}
		}
	}
}

// refuse answers rpc with "not granted" if it asks for a vote, and reports whether it did.
// The answer carries the candidate's own term, so the candidate neither steps down nor
// counts the vote.
func (g *voteGate) refuse(rpc raft.RPC) bool {
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, Addr: []byte(g.LocalAddr())}
	switch req := rpc.Command.(type) {
	case *raft.RequestVoteRequest:
		if req.LastLogIndex <= freshLogIndex {
			return false
		}
		rpc.Respond(&raft.RequestVoteResponse{RPCHeader: hdr, Term: req.Term}, nil)
	case *raft.RequestPreVoteRequest:
		if req.LastLogIndex <= freshLogIndex {
			return false
		}
		rpc.Respond(&raft.RequestPreVoteResponse{RPCHeader: hdr, Term: req.Term}, nil)
	default:
		return false
	}
	g.refused.Add(1)
	return true
}

// SetHeartbeatHandler implements raft.Transport: cb runs unless the gate has stopped,
// and stopGate waits for the runs in flight.
func (g *voteGate) SetHeartbeatHandler(cb func(rpc raft.RPC)) {
	if cb == nil {
		g.Transport.SetHeartbeatHandler(nil)
		return
	}
	g.Transport.SetHeartbeatHandler(func(rpc raft.RPC) {
		g.hbMu.RLock()
		defer g.hbMu.RUnlock()
		if g.hbClosed {
			rpc.Respond(nil, raft.ErrTransportShutdown)
			return
		}
		cb(rpc)
	})
}

// stopGate stops the forwarding goroutine and waits for it, waits for the heartbeats in
// flight and refuses later ones. Call it after Raft has shut down and before its stores
// close.
func (g *voteGate) stopGate() {
	close(g.stop)
	g.wg.Wait()
	g.hbMu.Lock()
	g.hbClosed = true
	g.hbMu.Unlock()
}

// gated wraps t in a vote gate, keeping the optional interfaces Raft looks for
// (pre-vote) visible.
func gated(g *voteGate, t raft.Transport) raft.Transport {
	if pv, ok := t.(raft.WithPreVote); ok {
		return struct {
			*voteGate
			raft.WithPreVote
		}{g, pv}
	}
	return g
}

// AllowVotes opens the vote gate of a Sequencer opened with Config.HoldVotes: from now
// on the node votes like any other. Call it once the node's log is known to be its own
// (see node.DataIdentity). Idempotent.
func (s *Sequencer) AllowVotes() {
	if s.parts.gate.held.Swap(false) {
		s.log.Info("vote gate opened: this node votes again")
	}
}

// VotesRefused counts the vote requests the gate answered "not granted".
func (s *Sequencer) VotesRefused() uint64 { return s.parts.gate.refused.Load() }
