package client

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/vmihailenco/msgpack/v5"
)

// Member is a cluster member as the leader's log records it.
type Member struct {
	NodeAddr
	// Role is RoleLeader for the leader that answered and RoleFollower for every other
	// member: a voter in the leader's view, whether or not it is up (ClusterStatus tells).
	Role Role `json:"role"`
}

// JoinRequest describes a running node to add to the cluster as a voter. The node must
// have been started with an empty data directory and without bootstrapping a cluster of
// its own; the leader refuses it (ErrBadArguments) unless it runs the cluster's partition
// count and procedure set.
type JoinRequest struct {
	// ID is the new node's unique id. Required.
	ID string
	// RaftAddr and ClientAddr are where the node's Raft transport and clients reach it.
	// Required.
	RaftAddr   string
	ClientAddr string
	// Partitions is the node's partition count; it must equal the cluster's.
	Partitions int
	// Procedures is the fingerprint of the node's procedure set (the Fingerprint of its
	// procedures.Registry); it must equal the cluster's.
	Procedures uint64
	// Incarnation identifies the node's data directory; the leader refuses a join under an
	// id whose recorded incarnation differs (the node lost its data). Optional.
	Incarnation string
	// ReadReplica joins the node as a read replica: a permanent non-voter that serves reads
	// at consistency Any and stream reads; the leader never promotes it.
	ReadReplica bool
	// Build is the node's build target: Go version, GOARCH and its instruction-set level,
	// as node.BuildTarget returns it. It must equal the leader's, since float results
	// depend on it (docs/procedures.md, Floats); a join without it is refused.
	Build string
}

// NodeStatus is one node's part of a ClusterStatus: its status, or why it did not answer.
type NodeStatus struct {
	// Addr is the client address the node was asked at.
	Addr string
	// ID is the node's id: Status.NodeID if it answered, else the id a member list names
	// at Addr, empty if none does.
	ID string
	// Status is the node's status; valid if Err is nil.
	Status Status
	// Err is why the node did not answer: an error matching ErrUnreachable if the client
	// could not connect to it, else the error of the one attempt (a timeout, a broken
	// connection, a server error such as ErrClusterMismatch).
	Err error
}

// ClusterStatus is the cluster as its nodes describe it: see Client.ClusterStatus.
type ClusterStatus struct {
	// Leader is the leader's id: the node that says it leads in the highest term, else the
	// leader most of the answering nodes name; empty if none is known.
	Leader string
	// Nodes are the nodes asked: those that answered first, ordered by id, each once even
	// if asked at two addresses; then those that did not, in the order they were asked.
	Nodes []NodeStatus
}

// Failed returns the nodes that did not answer.
func (cs *ClusterStatus) Failed() []NodeStatus {
	var out []NodeStatus
	for _, n := range cs.Nodes {
		if n.Err != nil {
			out = append(out, n)
		}
	}
	return out
}

// Members returns the cluster's members as the leader's log records them, ordered by id.
// The leader answers (any node may point the way): its list is current, where a
// follower may not yet have applied a recent join or removal. One exception: right after
// an election, until the new leader has committed an entry of its own term, its list may
// miss a change its predecessor committed last, and its status does not tell that moment
// apart. Asking is retried, following leader hints, until a leader answers, ctx ends or
// Config.MaxRetries runs out; a cluster without a leader therefore has no answer
// (ClusterStatus has one).
func (c *Client) Members(ctx context.Context) ([]Member, error) {
	if err := c.acquireFree(ctx); err != nil {
		return nil, c.opErr(fmt.Errorf("client: members: %w", err))
	}
	defer c.releaseFree()
	st, err := c.leaderStatus(ctx, "members")
	if err != nil {
		return nil, c.opErr(err)
	}
	out := make([]Member, len(st.Nodes))
	for i, n := range st.Nodes {
		out[i] = Member{NodeAddr: n, Role: RoleFollower}
		if n.ID == st.NodeID {
			out[i].Role = RoleLeader
		}
	}
	return out, nil
}

// ClusterStatus asks every node the seeds (Config.Addrs) lead to for its status: the
// seeds, then, in rounds, the leader each answer names and every member the leader's
// answer lists, each address once, in parallel within a round. Each node is asked once,
// as Status does: a node that does not answer is reported in Nodes with the error, not
// retried and not an error of ClusterStatus. It needs no leader, so it describes a
// cluster that has lost its quorum too. The error is non-nil only if the client closed.
func (c *Client) ClusterStatus(ctx context.Context) (ClusterStatus, error) {
	seen := map[string]bool{}
	byID := map[string]bool{}
	var answered, failed []NodeStatus
	for wave := c.cfg.Addrs; len(wave) > 0; {
		var todo []string
		for _, a := range wave {
			if a != "" && !seen[a] {
				seen[a] = true
				todo = append(todo, a)
			}
		}
		results := make([]NodeStatus, len(todo))
		var wg sync.WaitGroup
		for i, a := range todo {
			wg.Go(func() {
				st, err := c.Status(ctx, a)
				results[i] = NodeStatus{Addr: a, ID: st.NodeID, Status: st, Err: err}
			})
		}
		wg.Wait()
		if c.isClosing() {
			return ClusterStatus{}, fmt.Errorf("client: cluster status: %w", ErrClosed)
		}
		wave = nil
		for _, r := range results {
			switch {
			case r.Err != nil:
				failed = append(failed, r)
			case !byID[r.ID]: // the same node under another address counts once
				byID[r.ID] = true
				answered = append(answered, r)
				wave = append(wave, peerAddrs(&r.Status)...)
			}
		}
	}
	slices.SortFunc(answered, func(a, b NodeStatus) int { return strings.Compare(a.ID, b.ID) })
	ids := map[string]string{} // client address → member id, from the answers' member lists
	for _, r := range answered {
		for _, n := range r.Status.Nodes {
			ids[n.ClientAddr] = n.ID
		}
	}
	for i := range failed {
		failed[i].ID = ids[failed[i].Addr]
	}
	return ClusterStatus{Leader: leaderOf(answered), Nodes: append(answered, failed...)}, nil
}

// peerAddrs returns the client addresses of the other nodes a status names: the leader,
// and, from the leader itself, every member recorded in the log. Only the leader's list
// counts: a follower may not yet have applied a recent join or removal.
func peerAddrs(st *Status) []string {
	addrs := []string{st.LeaderClientAddr}
	if st.State == RoleLeader {
		for _, n := range st.Nodes {
			addrs = append(addrs, n.ClientAddr)
		}
	}
	return addrs
}

// leaderOf returns the id of the leader among the answers: the node that says it leads
// in the highest term, else the leader most nodes name.
func leaderOf(answered []NodeStatus) string {
	var leader string
	var term uint64
	for _, r := range answered {
		if r.Status.State == RoleLeader && r.Status.Term >= term {
			leader, term = r.ID, r.Status.Term
		}
	}
	if leader != "" {
		return leader
	}
	votes := map[string]int{}
	for _, r := range answered {
		if id := r.Status.LeaderID; id != "" {
			votes[id]++
			if votes[id] > votes[leader] {
				leader = id
			}
		}
	}
	return leader
}

// AddVoter asks the leader to add the node j describes and to record its addresses in
// the log, where every node finds them. The node enters as a learner (a Raft non-voter)
// and the leader promotes it to voter once it has caught up (Status.Learners shows how
// far it is). It returns once the leader has committed both; the new node then catches
// up from the leader. See the package's admin
// notes for where it goes and what is retried. An incomplete j is refused with
// ErrBadArguments before anything is sent; the leader refuses a node whose partition
// count, procedure set or build target differs from the cluster's with ErrBadArguments
// too.
func (c *Client) AddVoter(ctx context.Context, j JoinRequest) error {
	what := "add voter " + j.ID
	if j.ID == "" || j.RaftAddr == "" || j.ClientAddr == "" {
		return fmt.Errorf("client: %s: %w: a join request needs an id, a raft and a client address", what, ErrBadArguments)
	}
	args, err := msgpack.Marshal(&wire.JoinArgs{ID: j.ID, RaftAddr: j.RaftAddr, ClientAddr: j.ClientAddr,
		Partitions: j.Partitions, Procedures: j.Procedures, Incarnation: j.Incarnation,
		ReadReplica: j.ReadReplica, Build: j.Build})
	if err != nil {
		return fmt.Errorf("client: %s: %w: %w", what, ErrBadArguments, err)
	}
	if err := c.acquireFree(ctx); err != nil {
		return c.opErr(fmt.Errorf("client: %s: %w", what, err))
	}
	defer c.releaseFree()
	_, err = c.adminCall(ctx, what, &wire.Request{Op: wire.OpJoin, Args: args}, true)
	return c.opErr(err)
}

// Remove asks the leader to remove the member id from the Raft configuration and from
// the members recorded in the log. The removed node stops taking part; its process keeps
// running until its owner stops it. Removing the leader makes it step down once the
// change commits. The client first checks, with the leader's list (see Members), that id
// is a member: an unknown id gets ErrUnknownMember and changes nothing. What is retried: see
// Administration in the package documentation.
func (c *Client) Remove(ctx context.Context, id string) error {
	what := "remove " + id
	if id == "" {
		return fmt.Errorf("client: remove: %w: empty node id", ErrBadArguments)
	}
	if err := c.acquireFree(ctx); err != nil {
		return c.opErr(fmt.Errorf("client: %s: %w", what, err))
	}
	defer c.releaseFree()
	st, err := c.leaderStatus(ctx, what)
	if err != nil {
		return c.opErr(err)
	}
	if !isMember(&st, id) {
		return notMember(what, &st)
	}
	_, err = c.adminCall(ctx, what, &wire.Request{Op: wire.OpRemove, Key: []byte(id)}, true)
	return c.opErr(err)
}

// TransferLeadership asks the leader to hand leadership to the member id, or, with an
// empty id, to the most up-to-date voter, and returns once the leader has stepped down;
// the new leader is elected soon after (Members, Status or ClusterStatus show it), and
// the client follows it on its next request. If id leads already it returns nil at once.
// The client first checks, with the leader's list (see Members), that id is a member: an
// unknown id gets ErrUnknownMember and changes nothing. What is retried: see
// Administration in the package documentation.
func (c *Client) TransferLeadership(ctx context.Context, id string) error {
	what := "transfer leadership"
	if id != "" {
		what += " to " + id
	}
	if err := c.acquireFree(ctx); err != nil {
		return c.opErr(fmt.Errorf("client: %s: %w", what, err))
	}
	defer c.releaseFree()
	if id != "" {
		st, err := c.leaderStatus(ctx, what)
		if err != nil {
			return c.opErr(err)
		}
		if id == st.NodeID {
			return nil
		}
		if !isMember(&st, id) {
			return notMember(what, &st)
		}
	}
	_, err := c.adminCall(ctx, what, &wire.Request{Op: wire.OpTransferLeader, Key: []byte(id)}, false)
	return c.opErr(err)
}

// notMember is the error of the admin call what (which names the id) for an id that is
// not among the members the leader's status st lists: it names those, the ids to use.
func notMember(what string, st *Status) error {
	ids := make([]string, len(st.Nodes))
	for i, n := range st.Nodes {
		ids[i] = n.ID
	}
	return fmt.Errorf("client: %s: %w: the members, as leader %s lists them, are %s", what, ErrUnknownMember, st.NodeID, strings.Join(ids, ", "))
}

// isMember reports whether id is among the members st lists.
func isMember(st *Status, id string) bool {
	return slices.ContainsFunc(st.Nodes, func(n NodeAddr) bool { return n.ID == id })
}

// leaderStatus returns the leader's status: it asks the node the client takes for the
// leader and, while the node that answers does not lead, follows the leader it names or
// tries another node, with the retry rules of every other request. The caller holds a
// session-less slot.
func (c *Client) leaderStatus(ctx context.Context, what string) (Status, error) {
	rs := retry{what: what}
	for ; ; rs.attempt++ {
		addr, deposed, err := c.target(ctx)
		if err != nil {
			return Status{}, fmt.Errorf("client: %s: %w", what, err)
		}
		resp, sent, err := c.attempt(ctx, addr, &wire.Request{Op: wire.OpStatus}, deposed)
		if err == nil && resp.Code == wire.CodeOK {
			var w wire.Status
			if err := c.decode(resp.Value, &w); err != nil {
				return Status{}, fmt.Errorf("client: %s: status of %s: %w: %w", what, addr, ErrMalformed, err)
			}
			if w.State == string(RoleLeader) {
				return statusFromWire(&w), nil
			}
			// A node that does not lead points the way, as a NotLeader answer would.
			resp = wire.Response{Code: wire.CodeNotLeader, Leader: w.LeaderClientAddr,
				Message: fmt.Sprintf("%s is %s, not the leader", w.NodeID, w.State)}
		}
		v, _ := judge(addr, &resp, sent, err)
		if v == vDone || v == vExpired {
			if err == nil {
				err = resp.Err()
			}
			return Status{}, fmt.Errorf("client: %s: status of %s: %w", what, addr, err)
		}
		if err := c.next(ctx, &rs, v, addr, &resp, err); err != nil {
			return Status{}, err
		}
	}
}

// adminCall sends req, a membership change, to the leader: it follows leader hints and
// retries, as call does, but only while the attempts provably did not run (see
// Administration in the package documentation) — unless idempotent: a change that has the
// effect of once when it runs twice (adding a voter that is one, removing a node that is
// gone) is also sent again after an attempt whose outcome is in doubt, since the next
// leader may or may not have committed it (RAFT-NOTES: an Apply that fails with
// leadership lost may still commit). It returns the OK Response or the error that ended
// it. The caller holds a session-less slot.
func (c *Client) adminCall(ctx context.Context, what string, req *wire.Request, idempotent bool) (wire.Response, error) {
	rs := retry{what: what}
	for ; ; rs.attempt++ {
		addr, deposed, err := c.target(ctx)
		if err != nil {
			return wire.Response{}, fmt.Errorf("client: %s: %w", what, err)
		}
		r := *req
		resp, sent, err := c.attempt(ctx, addr, &r, deposed)
		v, doubt := judge(addr, &resp, sent, err)
		if doubt && idempotent {
			doubt, v = false, vAgain
		}
		switch {
		case doubt && err != nil:
			return wire.Response{}, fmt.Errorf("client: %s at %s: %w: %w", what, addr, ErrUnknownOutcome, err)
		case doubt, v == vDone, v == vExpired:
			if err == nil {
				err = resp.Err()
			}
			if err != nil {
				return resp, fmt.Errorf("client: %s at %s: %w", what, addr, err)
			}
			return resp, nil
		}
		if err := c.next(ctx, &rs, v, addr, &resp, err); err != nil {
			return wire.Response{}, err
		}
	}
}

// RequestRebuild asks the leader to rebuild the divergent voter id: the leader checks that
// id reports itself divergent and that the voters alive without it make a quorum, demotes
// it to non-voter and compacts its log to a snapshot, whose index it returns (the rebuild
// point). The node then discards its state and installs that snapshot (see
// docs/operations.md, "Automatic rebuild of a divergent replica"). A divergent node calls
// it for itself; an operator has no need to. A refusal because of the quorum returns
// a *RebuildRefusedError, which matches ErrRebuildRefused and holds the leader's reason;
// asking again later is safe (a node demoted already is not demoted again).
func (c *Client) RequestRebuild(ctx context.Context, id string) (uint64, error) {
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

// RebuildRefusedError is RequestRebuild's refusal. It matches ErrRebuildRefused.
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
