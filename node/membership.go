package node

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sequencer"
)

// membershipTimeout bounds one membership change on the leader.
const membershipTimeout = 30 * time.Second

// ErrJoinRefused is returned to a node that may not join: its partition count,
// procedure set or build target differs from the cluster's.
var ErrJoinRefused = errors.New("join refused")

// ErrJoining is why a node started with Config.Join is not ready while the cluster has
// not yet acknowledged its join (or refused it); ErrLearner follows it until the node is
// promoted to voter. It matches wire.ErrNotReady, like the
// other reasons of Readiness.
var ErrJoining error = &notReady{"joining the cluster"}

// admission is what a node started with Config.Join knows of its own join. Such a
// node receives the log, and could serve, as soon as the leader has added it to the Raft
// configuration; but until the leader acknowledges the join, its addresses may not be
// recorded yet and its join loop may ask again. It counts as ready only after the
// acknowledgement, so that whoever waits for it to be ready (an operator, a test) sees a
// member the leader lists, and a removal can no longer race with its own join.
type admission struct {
	// pending holds why the node is not admitted yet: nil once the join is acknowledged,
	// or for a node that never asked to join.
	pending atomic.Pointer[error]
}

// set records why the node is not admitted; nil means admitted.
func (a *admission) set(err error) {
	if err == nil {
		a.pending.Store(nil)
		return
	}
	a.pending.Store(&err)
}

// err returns why the node is not admitted yet, or nil.
func (a *admission) err() error {
	if p := a.pending.Load(); p != nil {
		return *p
	}
	return nil
}

// joinPending returns why this node, started with Config.Join, is not admitted yet,
// or nil. A node that has become a ready leader is admitted: it is a voter, and
// becomeLeader recorded its addresses.
func (n *Node) joinPending() error {
	if err := n.admission.err(); err != nil && !n.leading() {
		return err
	}
	return nil
}

// startJoin starts the join loop that asks the cluster at seeds to admit this node; until
// it succeeds, the node is not ready.
func (n *Node) startJoin(seeds []string) {
	n.admission.set(ErrJoining)
	n.joining.Store(true)
	n.wg.Add(1)
	go n.joinLoop(seeds)
}

// admin runs a membership request on the leader in its own goroutine: the changes wait for
// Raft, and the connection's read loop must go on meanwhile.
func (cc *clientConn) admin(req *wire.Request) {
	n := cc.n
	id := req.ID
	if err := n.ready(); err != nil {
		cc.fail(id, err)
		return
	}
	if !n.leading() {
		cc.fail(id, sequencer.ErrNotLeader)
		return
	}
	op, key, args := req.Op, string(req.Key), append([]byte(nil), req.Args...)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		ctx, cancel := context.WithTimeout(n.ctx, membershipTimeout)
		defer cancel()
		var err error
		var from uint64
		var refusal []byte
		switch op {
		case wire.OpJoin:
			err = n.addNode(ctx, args)
		case wire.OpRemove:
			err = n.removeNode(ctx, key)
		case wire.OpTransferLeader:
			err = n.seq.TransferLeadership(ctx, key)
		case wire.OpRebuild:
			var why rebuildRefusal
			if from, err = n.rebuildNode(ctx, key); errors.As(err, &why) {
				refusal, err = []byte(why), nil // an answer, not a failure: the reason alone
			}
		}
		if err != nil {
			cc.fail(id, err)
			return
		}
		cc.reply(&wire.Response{ID: id, NextOffset: from, Value: refusal})
	}()
}

// addNode admits a node after checking it runs what the cluster runs: as a learner
// (learners.go), which the leader promotes once it has caught up, and records its
// addresses and incarnation in the log so every node can find it. A member asking again
// keeps its suffrage (its addresses are updated). A join under the id of a member whose
// recorded incarnation differs is refused: that node lost its data directory, and must be
// removed before it joins again (identity.go).
func (n *Node) addNode(ctx context.Context, payload []byte) error {
	var j wire.JoinArgs
	if err := msgpack.Unmarshal(payload, &j); err != nil {
		return fmt.Errorf("%w: join arguments: %v", wire.ErrBadArguments, err)
	}
	if j.ID == "" || j.RaftAddr == "" || j.ClientAddr == "" {
		return fmt.Errorf("%w: join needs id, raft and client addresses", wire.ErrBadArguments)
	}
	info, _ := n.fsm.Cluster()
	if j.Partitions != info.Partitions {
		return &wire.Error{Code: wire.CodeBadArguments, Message: fmt.Sprintf(
			"%v: node %s has %d partitions, the cluster %d: start it with --partitions %d",
			ErrJoinRefused, j.ID, j.Partitions, info.Partitions, info.Partitions)}
	}
	if n.fsm.Deployment().Version < replica.VersionActiveRegistrations && j.Procedures != info.Procedures {
		return &wire.Error{Code: wire.CodeBadArguments, Message: fmt.Sprintf(
			"%v: node %s's procedure set (procedures, replicated tables, processors, changelogs) is not the cluster's: "+
				"run the lockstep build the members run (procedure fingerprints: node %016x, cluster %016x)",
			ErrJoinRefused, j.ID, j.Procedures, info.Procedures)}
	}
	if err := n.checkBuild(&j); err != nil {
		return err
	}
	rec := n.fsm.Nodes()[j.ID]
	if rec.Incarnation != "" && j.Incarnation != "" && rec.Incarnation != j.Incarnation {
		return &wire.Error{Code: wire.CodeBadArguments, Message: fmt.Sprintf(
			"%v: node %s is a member with incarnation %s, and this join comes from incarnation %s: its data directory "+
				"was wiped or replaced. Remove it first (lockstep cluster remove %s), then join again",
			ErrJoinRefused, j.ID, rec.Incarnation, j.Incarnation, j.ID)}
	}
	voter, member := false, false
	members, err := n.seq.Members()
	if err != nil {
		return err
	}
	for _, m := range members {
		voter = voter || (m.ID == j.ID && m.Voter)
		member = member || m.ID == j.ID
	}
	if j.ReadReplica && voter {
		return &wire.Error{Code: wire.CodeBadArguments, Message: fmt.Sprintf(
			"%v: node %s is a voter; remove it before it joins again as a read replica", ErrJoinRefused, j.ID)}
	}
	if !member && !j.ReadReplica {
		// A learner never counts towards the quorum, but it is here to become a voter:
		// refuse now what its promotion would be refused for (learners.go).
		views, err := n.viewMembers(true)
		if err != nil {
			return err
		}
		if err := promotionQuorum(j.ID, views); err != nil {
			return fmt.Errorf("join %s: %w", j.ID, err)
		}
	}
	st, err := n.checkReachable(ctx, j.ID, j.RaftAddr, j.ClientAddr)
	if err != nil {
		return err
	}
	if err := n.checkJoinVersions(j.ID, &st); err != nil {
		return err
	}
	if voter {
		err = n.seq.AddVoter(ctx, j.ID, j.RaftAddr) // a voter's address update
	} else {
		err = n.seq.AddNonvoter(ctx, j.ID, j.RaftAddr)
	}
	if err != nil {
		return err
	}
	inc := j.Incarnation
	if inc == "" {
		inc = rec.Incarnation
	}
	if err := n.recordNode(ctx, batch.NodeInfo{ID: j.ID, RaftAddr: j.RaftAddr, ClientAddr: j.ClientAddr, Incarnation: inc,
		ReadReplica: j.ReadReplica || (member && !voter && rec.ReadReplica)}); err != nil {
		return err
	}
	n.joined(j.ID)
	return nil
}

func (n *Node) removeNode(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("%w: remove needs a node id", wire.ErrBadArguments)
	}
	if err := n.seq.RemoveServer(ctx, id); err != nil {
		return err
	}
	_, err := n.propose(ctx, batch.Item{Kind: batch.KindRemoveNode, Key: []byte(id)})
	return err
}

// checkBuild refuses a joining node built for another target than this leader: float
// state computed by the two binaries could differ (docs/procedures.md, Floats). The leader
// stands for the cluster: it runs the log the joiner is to replay.
func (n *Node) checkBuild(j *wire.JoinArgs) error {
	switch {
	case j.Build == "":
		return &wire.Error{Code: wire.CodeBadArguments, Message: fmt.Sprintf(
			"%v: node %s does not report its build target; the cluster runs %q: run the same lockstep binary on every node",
			ErrJoinRefused, j.ID, n.cfg.BuildTarget)}
	case j.Build != n.cfg.BuildTarget:
		return &wire.Error{Code: wire.CodeBadArguments, Message: fmt.Sprintf(
			"%v: build target differs: node %s is built for %q, the cluster (leader %s) for %q; float results "+
				"depend on it (docs/procedures.md, Floats): build every node with the same Go version, GOARCH and GOAMD64",
			ErrJoinRefused, j.ID, j.Build, n.cfg.ID, n.cfg.BuildTarget)}
	}
	return nil
}

// joinLoop asks the cluster reachable at seeds to add this node, through the client
// library's admin API (it finds the leader and follows its hints), until the leader
// acknowledges the join (the node is a learner and its addresses are applied on the
// leader), the cluster refuses it, or the node closes; after an acknowledgement it waits
// for the promotion to voter (awaitPromotion). Started by startJoin.
func (n *Node) joinLoop(seeds []string) {
	defer n.wg.Done()
	cl, err := client.Open(n.peerClientConfig(client.Config{Addrs: seeds, ClusterID: n.cfg.ClusterID, Logger: n.log,
		RequestTimeout: membershipTimeout, MaxRetries: -1}))
	if err != nil {
		n.log.Error("cannot join: bad seeds", "seeds", seeds, "err", err)
		n.admission.set(fmt.Errorf("%w: %v", ErrJoining, err))
		return
	}
	defer cl.Close()
	n.mu.Lock()
	inc := n.identity.Incarnation
	n.mu.Unlock()
	join := client.JoinRequest{ID: n.cfg.ID, RaftAddr: n.RaftAddr(), ClientAddr: n.ClientAddr(),
		Partitions: n.fsm.Partitions(), Procedures: n.fsm.Fingerprint(), Incarnation: inc, ReadReplica: n.cfg.ReadReplica,
		Build: n.cfg.BuildTarget}
	for attempt := 0; ; attempt++ {
		err := cl.Cluster().AddMember(n.ctx, join)
		switch {
		case err == nil:
			if n.cfg.ReadReplica {
				n.log.Info("joined the cluster as a read replica", "seeds", seeds)
				n.finishRebuild() // a read replica's own hash comparison verifies it
				n.admission.set(nil)
				return
			}
			n.log.Info("joined the cluster as a learner", "seeds", seeds)
			n.awaitPromotion()
			return
		case errors.Is(err, client.ErrBadArguments), errors.Is(err, client.ErrClusterMismatch),
			errors.Is(err, client.ErrProtocolVersion):
			n.log.Error("cluster refused this node", "err", err)
			n.joining.Store(false)
			// The refusal's text, not its code: clients of this node get NotReady.
			n.admission.set(fmt.Errorf("%w: %v", ErrJoining, err))
			return
		case n.ctx.Err() != nil:
			return
		}
		n.log.Debug("join attempt failed", "seeds", seeds, "err", err)
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(min(time.Duration(attempt+1)*200*time.Millisecond, 2*time.Second)):
		}
	}
}
