package node

// Automatic rebuild of a divergent replica (DESIGN.md invariant 6). A replica whose hashes
// differ from a majority of its peers' marks itself divergent (divergence.go): it stops
// serving, and hands off a leadership it holds (abstain.go). It then rebuilds itself, with
// no operator, the way an operator replaces a lost node (cluster remove, a fresh data
// directory, --join), but online and without leaving the configuration:
//
//  1. the divergent node, once it no longer leads, asks the leader to rebuild it
//     (client.Peer.RequestRebuild, wire.OpRebuild);
//  2. the leader checks that the node reports itself divergent and that the voters alive
//     and healthy without it make a quorum of the configuration without it (else it
//     refuses, and the node stays fenced and asks again: ErrRebuildRefused); it clears
//     the node's recorded incarnation, demotes it to non-voter and compacts its own log to
//     a snapshot (sequencer.CompactAll), whose index it returns: the rebuild point;
//  3. the node closes RebuildRequested; its owner closes it, calls PrepareRebuild (the
//     Raft state discarded, a new unconfirmed incarnation, the rebuild counted in the
//     identity file) and starts it again with the Config PrepareRebuild returns (Join: the
//     other members);
//  4. the new incarnation joins as a learner (learners.go): the leader's log starts after
//     its snapshot, so the node receives the snapshot (a healthy replica's state, checked
//     against the hashes it carries) and the log after it, and replays it;
//  5. the leader promotes it to voter only once it has caught up and a hash check past
//     the rebuild point, computed by the node itself, equals the leader's own; the node
//     then records the rebuild as finished.
//
// If leadership moves before the node installed the snapshot, the new leader may hold its
// log from index 1 and send entries instead: the node's rebuild guard (rebuild_guard.go)
// applies none and the node prepares the same rebuild again, while the leader compacts
// past the rebuild point (tendRebuilds).
//
// A node rebuilds automatically at most MaxAutoRebuilds times per data directory: one
// that diverges again stays fenced and says why (its code, or its machine, is suspect,
// and rebuilding it for ever would hide that). Config.DisableAutoRebuild keeps every
// divergent node fenced.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sequencer"
)

// MaxAutoRebuilds is how many automatic rebuilds a node's data directory may go through.
// A replica that diverges again after as many stays fenced until an operator replaces it.
const MaxAutoRebuilds = 1

// rebuildRetryInterval is how often a divergent node asks the leader again after a
// refusal or a failure.
const rebuildRetryInterval = time.Second

// ErrRebuildRefused is the leader's refusal to rebuild a divergent voter now: demoting it
// would leave fewer healthy voters alive than a quorum needs. The leader answers it as a
// refusal (client.ErrRebuildRefused), not as a failed call; the node asks again.
var ErrRebuildRefused = errors.New("rebuild refused")

// rebuildRefusal is a leader's refusal to rebuild, with its reason; it matches
// ErrRebuildRefused. The reason alone goes back to the asking node.
type rebuildRefusal string

func (r rebuildRefusal) Error() string { return ErrRebuildRefused.Error() + ": " + string(r) }

// Is reports whether target is ErrRebuildRefused.
func (r rebuildRefusal) Is(target error) bool { return target == ErrRebuildRefused }

// The rebuild states a node reports (wire.Status.Rebuild).
const (
	// RebuildWaiting: divergent, asking the leader for a rebuild.
	RebuildWaiting = "waiting"
	// RebuildRefused: the leader refused the rebuild for now (the quorum); asking again.
	RebuildRefused = "refused"
	// RebuildRebuilding: demoted; the state is being discarded and rebuilt from a healthy
	// replica's snapshot, until the hashes are verified and the node is a voter again.
	RebuildRebuilding = "rebuilding"
	// RebuildFenced: divergent, and not rebuilt automatically (disabled, or diverged
	// again after MaxAutoRebuilds rebuilds).
	RebuildFenced = "fenced"
)

// RebuildPlan is what the owner of a node that must be rebuilt needs (RebuildRequested).
type RebuildPlan struct {
	// From is the index of the leader's snapshot the node will install: the rebuild point.
	From uint64
	// Reason is the divergence that caused the rebuild.
	Reason string
	// Seeds are the client addresses of the other members, to join again.
	Seeds []string
	// Detected is when the node found itself divergent.
	Detected time.Time
	// Retry: the same rebuild again, not a new one (an attempt interrupted before it
	// applied anything: interruptRebuild); PrepareRebuild keeps the identity as it is.
	Retry bool
}

// rebuilder is a node's part in its own rebuild.
type rebuilder struct {
	wake      chan struct{} // capacity 1: the FSM diverged
	requested chan struct{} // closed (once: request) when the owner must (re)build the node
	once      sync.Once

	mu       sync.Mutex
	state    string
	note     string
	plan     RebuildPlan
	detected time.Time

	// Counts for the metrics: this data directory's rebuilds as its identity file records
	// them, plus this process's.
	started, finished, failed, refused atomic.Uint64
}

// initRebuild sets up the node's rebuild state from its identity: a node started after
// PrepareRebuild is rebuilding until its promotion.
func (n *Node) initRebuild(id DataIdentity) {
	r := &n.rebuild
	r.wake, r.requested = make(chan struct{}, 1), make(chan struct{})
	r.started.Store(uint64(id.Rebuilds))
	r.finished.Store(uint64(id.Rebuilds))
	if id.Rebuilds > 0 && !id.RebuildDone {
		r.finished.Add(^uint64(0))
		r.state = RebuildRebuilding
		r.note = fmt.Sprintf("rebuild %d of at most %d: installing a healthy replica's snapshot (index %d) and replaying the log; "+
			"a voter again once a hash check past index %d matches the leader's (divergence: %s)",
			id.Rebuilds, MaxAutoRebuilds, id.RebuildFrom, id.RebuildFrom, id.RebuildReason)
		n.log.Warn("rebuilding after a divergence", "rebuild", id.Rebuilds, "from", id.RebuildFrom, "reason", id.RebuildReason)
	}
}

// setRebuild records the rebuild state and note; it logs a change at warning level.
func (n *Node) setRebuild(state, note string) {
	r := &n.rebuild
	r.mu.Lock()
	changed := r.state != state || r.note != note
	if state == RebuildRefused && r.state != RebuildRefused {
		r.refused.Add(1)
	}
	r.state, r.note = state, note
	r.mu.Unlock()
	if changed && state != "" {
		n.log.Warn("divergent replica: rebuild "+state, "note", note)
	}
}

// rebuildStatus returns the rebuild state and note (wire.Status.Rebuild, RebuildNote).
func (n *Node) rebuildStatus() (state, note string) {
	n.rebuild.mu.Lock()
	defer n.rebuild.mu.Unlock()
	return n.rebuild.state, n.rebuild.note
}

// RebuildRequested is closed once the leader has demoted this divergent node for a
// rebuild. The owner then closes the node, calls PrepareRebuild with RebuildPlan, and
// starts it again with the Config PrepareRebuild returns.
func (n *Node) RebuildRequested() <-chan struct{} { return n.rebuild.requested }

// RebuildPlan returns the plan of the rebuild RebuildRequested announced.
func (n *Node) RebuildPlan() RebuildPlan {
	n.rebuild.mu.Lock()
	defer n.rebuild.mu.Unlock()
	return n.rebuild.plan
}

// wakeRebuild tells rebuildLoop the FSM diverged. Never blocks.
func (n *Node) wakeRebuild() {
	select {
	case n.rebuild.wake <- struct{}{}:
	default:
	}
}

// rebuildLoop asks the leader to rebuild this node once it is divergent, every
// rebuildRetryInterval until the leader agrees or the node is fenced for good.
func (n *Node) rebuildLoop() {
	defer n.wg.Done()
	select {
	case <-n.ctx.Done():
		return
	case <-n.rebuild.wake:
	}
	n.rebuild.mu.Lock()
	n.rebuild.detected = time.Now()
	n.rebuild.mu.Unlock()
	for !n.tryRebuild() {
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(rebuildRetryInterval):
		}
	}
}

// tryRebuild makes one step of a divergent node's rebuild; it reports whether the loop is
// over (the rebuild was granted, or the node is fenced for good).
func (n *Node) tryRebuild() (done bool) {
	div := n.fsm.Divergent()
	if div == nil {
		return false
	}
	n.mu.Lock()
	id := n.identity
	n.mu.Unlock()
	switch {
	case n.cfg.DisableAutoRebuild:
		n.setRebuild(RebuildFenced, "automatic rebuild disabled (--auto-rebuild=false): replace the node by hand "+
			"(docs/operations.md, \"Replace a lost node\")")
		return true
	case id.Rebuilds >= MaxAutoRebuilds:
		n.rebuild.failed.Add(1)
		n.setRebuild(RebuildFenced, fmt.Sprintf("diverged again after %d automatic rebuild(s) (the last from index %d, after: %s): "+
			"stays fenced, since a replica that keeps diverging points at its code or its machine; investigate, then replace it by hand "+
			"(docs/operations.md, \"Automatic rebuild of a divergent replica\")", id.Rebuilds, id.RebuildFrom, id.RebuildReason))
		return true
	case n.seq.IsLeader():
		n.setRebuild(RebuildWaiting, "divergent leader: hands the leadership off before its rebuild")
		return false
	}
	if st, _ := n.rebuildStatus(); st == "" {
		n.setRebuild(RebuildWaiting, "asking the leader for a rebuild")
	}
	var seeds []string
	for mid, info := range n.fsm.Nodes() {
		if mid != n.cfg.ID && info.ClientAddr != "" {
			seeds = append(seeds, info.ClientAddr)
		}
	}
	slices.Sort(seeds)
	if len(seeds) == 0 {
		n.setRebuild(RebuildWaiting, "no other member known to ask")
		return false
	}
	cl, err := client.Open(n.peerClientConfig(client.Config{Addrs: seeds, ClusterID: n.cfg.ClusterID, Logger: n.log,
		RequestTimeout: membershipTimeout, MaxRetries: 2 * len(seeds)}))
	if err != nil {
		n.setRebuild(RebuildWaiting, err.Error())
		return false
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(n.ctx, membershipTimeout)
	from, err := client.NewPeer(cl).RequestRebuild(ctx, n.cfg.ID)
	cancel()
	var refused *client.RebuildRefusedError
	switch {
	case errors.As(err, &refused):
		n.setRebuild(RebuildRefused, refused.Reason)
		return false
	case err != nil:
		n.setRebuild(RebuildWaiting, fmt.Sprintf("rebuild request failed, asking again: %v", err))
		return false
	}
	r := &n.rebuild
	r.mu.Lock()
	r.plan = RebuildPlan{From: from, Reason: div.Error(), Seeds: seeds, Detected: r.detected}
	r.mu.Unlock()
	r.started.Add(1)
	n.setRebuild(RebuildRebuilding, fmt.Sprintf("demoted to non-voter; discarding its state to install the leader's snapshot "+
		"at index %d (rebuild %d of at most %d)", from, id.Rebuilds+1, MaxAutoRebuilds))
	r.request()
	return true
}

// request closes requested, once.
func (r *rebuilder) request() { r.once.Do(func() { close(r.requested) }) }

// interruptRebuild is the rebuild guard's call (rebuild_guard.go): the leader replays
// the log from its start instead of sending the snapshot, so this attempt is over before
// it applied anything; the owner prepares the same rebuild again (RebuildPlan.Retry). It
// runs on the apply goroutine and does not block.
func (n *Node) interruptRebuild() {
	n.mu.Lock()
	id := n.identity
	n.mu.Unlock()
	r := &n.rebuild
	r.mu.Lock()
	r.plan = RebuildPlan{From: id.RebuildFrom, Reason: id.RebuildReason, Seeds: slices.Clone(n.cfg.Join),
		Detected: time.UnixMilli(id.RebuildDetectedMs), Retry: true}
	r.mu.Unlock()
	n.setRebuild(RebuildRebuilding, fmt.Sprintf("rebuild %d interrupted: the leader holds its log from before the rebuild point %d "+
		"(leadership moved) and sent entries instead of a snapshot; none applied, preparing the rebuild again", id.Rebuilds, id.RebuildFrom))
	r.request()
}

// finishRebuild records, once a rebuilt node is a voter again, that its rebuild is over.
func (n *Node) finishRebuild() {
	n.mu.Lock()
	id := n.identity
	if id.Rebuilds == 0 || id.RebuildDone {
		n.mu.Unlock()
		return
	}
	id.RebuildDone = true
	err := writeIdentity(n.cfg.DataDir, id)
	if err == nil {
		n.identity = id
	}
	n.mu.Unlock()
	if err != nil {
		n.log.Error("cannot record the end of the rebuild", "err", err)
		return
	}
	n.rebuild.finished.Add(1)
	n.setRebuild("", "")
	took := time.Duration(0)
	if id.RebuildDetectedMs > 0 {
		took = time.Since(time.UnixMilli(id.RebuildDetectedMs))
	}
	n.log.Warn("rebuild finished: hashes verified, a voter again", "rebuild", id.Rebuilds, "from", id.RebuildFrom,
		"since_detection", took.Round(time.Millisecond))
}

// PrepareRebuild readies the data directory of the closed node that cfg configured for
// its rebuild: it discards the Raft state (the log, the snapshots), draws a new
// incarnation, unconfirmed, and counts the rebuild in the identity file. It returns the
// Config to start the node with: the same, joining plan.Seeds instead of bootstrapping.
func PrepareRebuild(cfg Config, plan RebuildPlan) (Config, error) {
	if cfg.Sequencer.LogStore != nil {
		return cfg, fmt.Errorf("%w: a node with an injected log store cannot be rebuilt", ErrNodeConfig)
	}
	old, ok, err := readIdentity(cfg.DataDir)
	if err != nil {
		return cfg, err
	}
	if !ok || old.NodeID != cfg.ID {
		return cfg, fmt.Errorf("%w: %s holds no identity of node %s", ErrIdentityMismatch, cfg.DataDir, cfg.ID)
	}
	if err := sequencer.DiscardState(cfg.DataDir); err != nil {
		return cfg, err
	}
	if plan.Retry {
		cfg.Bootstrap, cfg.Join = nil, slices.Clone(plan.Seeds)
		return cfg, nil
	}
	id := DataIdentity{ClusterID: old.ClusterID, NodeID: old.NodeID, Incarnation: newIncarnation(),
		Rebuilds: old.Rebuilds + 1, RebuildFrom: plan.From, RebuildReason: plan.Reason, RebuildDetectedMs: plan.Detected.UnixMilli()}
	if err := writeIdentity(cfg.DataDir, id); err != nil {
		return cfg, err
	}
	cfg.Bootstrap, cfg.Join = nil, slices.Clone(plan.Seeds)
	return cfg, nil
}

// rebuildNode is the leader's part of a rebuild (OpRebuild): it checks that node id is a
// divergent member and that demoting it keeps a quorum, clears its recorded incarnation
// (its new one is recorded when it joins again), demotes it, and compacts the log to a
// snapshot, whose index it returns. Asking again for a node already demoted compacts
// again and returns the new index.
func (n *Node) rebuildNode(ctx context.Context, id string) (uint64, error) {
	if id == "" {
		return 0, fmt.Errorf("%w: rebuild needs a node id", wire.ErrBadArguments)
	}
	if id == n.cfg.ID {
		return 0, rebuildRefusal("the leader is not rebuilt: a divergent leader hands its leadership off first")
	}
	members, err := n.seq.Members()
	if err != nil {
		return 0, err
	}
	i := slices.IndexFunc(members, func(m sequencer.Member) bool { return m.ID == id })
	if i < 0 {
		return 0, fmt.Errorf("%w: %s is not a member", wire.ErrBadArguments, id)
	}
	views, err := n.viewMembers(false)
	if err != nil {
		return 0, err
	}
	j := slices.IndexFunc(views, func(v memberView) bool { return v.ID == id })
	if j < 0 || views[j].status == nil || views[j].status.Divergent == "" {
		return 0, fmt.Errorf("%w: %s does not report itself divergent; only a divergent replica is rebuilt", wire.ErrBadArguments, id)
	}
	if members[i].Voter {
		if err := rebuildQuorum(id, views); err != nil {
			return 0, err
		}
	}
	if err := n.clearIncarnation(ctx, id); err != nil {
		return 0, err
	}
	if members[i].Voter {
		if err := n.seq.DemoteVoter(ctx, id); err != nil {
			return 0, err
		}
		n.log.Warn("divergent replica demoted to non-voter for its rebuild", "member", id, "divergence", views[j].status.Divergent)
	}
	from, err := n.compactForRebuild(ctx)
	if err != nil {
		return 0, err
	}
	n.log.Warn("rebuild granted: the log starts after a snapshot the replica will install", "member", id, "from", from)
	return from, nil
}

// compactForRebuild compacts the leader's log to a snapshot taken now, which a rebuilding
// member installs instead of replaying the log; it returns the snapshot's index.
func (n *Node) compactForRebuild(ctx context.Context) (uint64, error) {
	// An entry of the leader's own, so that the snapshot has something new to take.
	if _, err := n.propose(ctx, batch.Item{Kind: batch.KindHashCheck}); err != nil {
		return 0, err
	}
	return n.seq.CompactAll(ctx)
}

// tendRebuilds is the leader's part in a rebuild whose leader changed: a rebuilding
// learner that has not reached its rebuild point would be sent the log from an index at
// or before it (the rebuild guard refuses it), so the leader compacts past it first.
func (n *Node) tendRebuilds(views []memberView) {
	for _, v := range views {
		st := v.status
		if v.Voter || st == nil || st.Rebuild != RebuildRebuilding || st.AppliedIndex >= st.RebuildFrom {
			continue
		}
		first, err := n.seq.FirstLogIndex()
		if err != nil || first > st.RebuildFrom {
			continue
		}
		ctx, cancel := context.WithTimeout(n.ctx, membershipTimeout)
		at, err := n.compactForRebuild(ctx)
		cancel()
		if err != nil {
			n.log.Warn("cannot compact the log for a rebuilding member", "member", v.ID, "err", err)
			return
		}
		n.log.Warn("log compacted for a rebuilding member whose rebuild point it still held", "member", v.ID,
			"rebuild_from", st.RebuildFrom, "snapshot", at)
		return // one compaction serves every rebuilding member
	}
}

// rebuildQuorum refuses to demote voter id when the voters alive and healthy without it
// (the leader, the other voters that answered and are not divergent) would not make a
// quorum of the configuration without it.
func rebuildQuorum(id string, views []memberView) error {
	voters, alive, down := countVoters(views, id, func(v memberView) bool { return v.status != nil && v.status.Divergent == "" })
	after := voters - 1
	if quorum := after/2 + 1; alive < quorum {
		return rebuildRefusal(fmt.Sprintf("demoting %s would leave %d voters of which %d are alive and healthy (%s are not), and a quorum "+
			"needs %d: it stays a fenced voter until enough voters are back", id, after, alive, strings.Join(down, ", "), quorum))
	}
	return nil
}

// rebuildVerified reports whether a rebuilding learner whose status is st has a hash check
// past its rebuild point equal to the leader's own record (own) at the same index; else a
// note saying what it waits for.
func rebuildVerified(own []replica.HashRecord, st *wire.Status) (bool, string) {
	for _, h := range slices.Backward(st.HashChecks) {
		if h.Index <= st.RebuildFrom {
			break
		}
		k := slices.IndexFunc(own, func(r replica.HashRecord) bool { return r.Index == h.Index })
		if k < 0 {
			continue
		}
		if !slices.Equal(own[k].Hashes, h.Hashes) || own[k].Meta != h.Meta {
			return false, fmt.Sprintf("rebuilding: hashes at index %d differ from the leader's", h.Index)
		}
		return true, ""
	}
	return false, fmt.Sprintf("rebuilding: applied %d, waiting for a hash check past index %d to verify", st.AppliedIndex,
		st.RebuildFrom)
}

// rebuildMetrics registers the rebuild counters of n.
func rebuildMetrics(reg prometheus.Registerer, r *rebuilder) {
	c := func(outcome string, v *atomic.Uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "lockstep_rebuilds_total", Help: "Automatic rebuilds " +
			"of this node after a divergence: started (demoted, state discarded), finished (hashes verified, a voter again), " +
			"failed (diverged again after a rebuild: fenced), refused (the leader refused: the quorum).",
			ConstLabels: prometheus.Labels{"outcome": outcome}}, func() float64 { return float64(v.Load()) })
	}
	reg.MustRegister(c("started", &r.started), c("finished", &r.finished), c("failed", &r.failed), c("refused", &r.refused))
}
