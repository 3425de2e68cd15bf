package node

// A node's identity on disk. Raft's safety rests on a voter never forgetting its log: a
// voter that restarts with an empty or replaced data directory, under the id the cluster
// knows, grants its vote to any candidate, and can help elect a leader that lacks
// committed entries. So every data directory carries an identity file (identity.json):
// the cluster id, the node id and an incarnation, a random id drawn when the directory is
// first used, and whether the cluster has confirmed it. The leader records each member's
// incarnation in the log (batch.NodeInfo). At start:
//
//  1. a confirmed identity with no Raft state beside it is a lost log: the node refuses to
//     start (ErrDataLost) and says how to replace it;
//  2. an identity of another node or cluster is refused (ErrIdentityMismatch); a damaged
//     identity file too (ErrDataDamaged), as is a log entry or snapshot that fails its
//     checksum (the sequencer checks them all before Raft starts);
//  3. a new directory gets a new, unconfirmed incarnation. Until the node finds its own id
//     recorded with this incarnation (or with none, once caught up: a bootstrap peer the
//     first leader recorded before it knew its incarnation) in the applied log, it holds its votes
//     (sequencer.Config.HoldVotes), while it still receives the log; if it finds another
//     incarnation recorded under its id, the directory was wiped or replaced: it stays
//     out of votes and leadership and is not ready (ErrStaleIdentity);
//  4. a node that bootstraps a new cluster confirms its identity at once, after checking
//     that none of its peers records another incarnation under its id (a wiped node
//     restarted with its old --bootstrap flags would otherwise vote with an empty log).
//
// A directory from before identities (Raft state, no identity file) is adopted: it gets
// an incarnation, confirmed, and its log entries without checksums are accepted.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sequencer"
)

// identityFile is the identity's file name in the data directory.
const identityFile = "identity.json"

// peerCheckTimeout bounds the question a bootstrapping node with an empty data directory
// asks each peer (does it run the cluster already?).
const peerCheckTimeout = 2 * time.Second

// Errors of a data directory that must not be served from. Each message says what to do;
// docs/operations.md ("Wiped or damaged data directory") has the steps.
var (
	// ErrDataLost: the directory belonged to a confirmed member but has no Raft log.
	ErrDataLost = errors.New("data directory lost its log")
	// ErrDataDamaged: the identity file, a log entry or a snapshot fails its checksum.
	ErrDataDamaged = errors.New("data directory damaged")
	// ErrIdentityMismatch: the directory belongs to another node id or cluster.
	ErrIdentityMismatch = errors.New("data directory belongs to another node")
	// ErrStaleIdentity: the cluster records another incarnation under this node's id.
	ErrStaleIdentity error = &notReady{"stale identity: this node's data directory was wiped or replaced"}
)

// DataIdentity is the content of a data directory's identity file.
type DataIdentity struct {
	ClusterID string `json:"cluster_id"`
	NodeID    string `json:"node_id"`
	// Incarnation is random, drawn when the directory was first used.
	Incarnation string `json:"incarnation"`
	// Confirmed is set once the cluster recorded this incarnation (or the node
	// bootstrapped the cluster): from then on, a missing log is a lost log.
	Confirmed bool `json:"confirmed"`
	// Legacy is set for a directory adopted from before identities: its log entries may
	// lack checksums.
	Legacy bool `json:"legacy,omitempty"`
	// Rebuilds counts the automatic rebuilds this directory went through (rebuild.go);
	// RebuildFrom, RebuildReason and RebuildDetectedMs (Unix ms) describe the last one,
	// and RebuildDone is set once the node was verified and a voter again after it.
	Rebuilds          int    `json:"rebuilds,omitempty"`
	RebuildFrom       uint64 `json:"rebuild_from,omitempty"`
	RebuildReason     string `json:"rebuild_reason,omitempty"`
	RebuildDetectedMs int64  `json:"rebuild_detected_ms,omitempty"`
	RebuildDone       bool   `json:"rebuild_done,omitempty"`
}

// newIncarnation draws a random incarnation.
func newIncarnation() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// readIdentity reads dir's identity file: ok false if there is none; an error wrapping
// ErrDataDamaged if it fails its checksum or does not parse.
func readIdentity(dir string) (id DataIdentity, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, identityFile))
	if errors.Is(err, os.ErrNotExist) {
		return id, false, nil
	} else if err != nil {
		return id, false, err
	}
	body, sum, found := bytes.Cut(b, []byte("\ncrc32c "))
	if !found || strings.TrimSpace(string(sum)) != fmt.Sprintf("%08x", crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli))) {
		return id, false, fmt.Errorf("%w: %s fails its checksum", ErrDataDamaged, filepath.Join(dir, identityFile))
	}
	if err := json.Unmarshal(body, &id); err != nil {
		return id, false, fmt.Errorf("%w: %s: %v", ErrDataDamaged, filepath.Join(dir, identityFile), err)
	}
	return id, true, nil
}

// writeIdentity writes id to dir atomically (a temporary file, fsynced, renamed).
func writeIdentity(dir string, id DataIdentity) error {
	body, _ := json.MarshalIndent(id, "", "  ")
	b := fmt.Appendf(body, "\ncrc32c %08x\n", crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(dir, identityFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, identityFile)); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// openIdentity applies the start-up rules 1-3 to cfg's data directory and returns the
// identity the node runs under (written to disk if it was not there).
func openIdentity(cfg Config) (DataIdentity, error) {
	id, ok, err := readIdentity(cfg.DataDir)
	if err != nil {
		return id, err
	}
	st, err := sequencer.InspectDataDir(cfg.DataDir)
	if err != nil {
		return id, err
	}
	if ls := cfg.Sequencer.LogStore; ls != nil {
		// A log store the caller gives (the fault harness's crash journal) holds the log
		// instead of raft.db or wal/.
		last, err := ls.LastIndex()
		if err != nil {
			return id, fmt.Errorf("%w: %w", ErrDataDamaged, err)
		}
		st.HasState = st.HasState || last > 0
	}
	switch {
	case ok && id.NodeID != cfg.ID:
		return id, fmt.Errorf("%w: %s is node %s's (incarnation %s), not %s's: start %s with its own data directory",
			ErrIdentityMismatch, cfg.DataDir, id.NodeID, id.Incarnation, cfg.ID, cfg.ID)
	case ok && id.ClusterID != cfg.ClusterID:
		return id, fmt.Errorf("%w: %s belongs to cluster %q, not %q", ErrIdentityMismatch, cfg.DataDir, id.ClusterID, cfg.ClusterID)
	case ok && id.Confirmed && !st.HasState:
		return id, lostLogError(cfg, id)
	case ok:
		return id, nil
	case st.HasState: // a directory from before identities
		id = DataIdentity{ClusterID: cfg.ClusterID, NodeID: cfg.ID, Incarnation: newIncarnation(), Confirmed: true, Legacy: true}
	default:
		id = DataIdentity{ClusterID: cfg.ClusterID, NodeID: cfg.ID, Incarnation: newIncarnation()}
	}
	return id, writeIdentity(cfg.DataDir, id)
}

// lostLogError is ErrDataLost for node id's directory, with the replace procedure.
func lostLogError(cfg Config, id DataIdentity) error {
	return fmt.Errorf("%w: %s belonged to node %s of cluster %s (incarnation %s), but holds no Raft log: "+
		"the node must not vote as though it still had one. Replace it: run \"lockstep cluster remove %s\" against the "+
		"cluster, empty %s, and start the node again with --join (docs/operations.md, \"Wiped or damaged data directory\")",
		ErrDataLost, cfg.DataDir, id.NodeID, id.ClusterID, id.Incarnation, id.NodeID, cfg.DataDir)
}

// checkBootstrapPeers refuses to bootstrap from an unconfirmed (new) data directory when
// a peer of cfg.Bootstrap runs the cluster and records another incarnation under this
// node's id: this node was one of its members and lost its data (rule 4). A peer that does
// not answer, or records no incarnation for this node (it never saw it: a late first
// start), is no evidence of a loss.
func (n *Node) checkBootstrapPeers(id DataIdentity) error {
	for _, p := range n.cfg.Bootstrap {
		if p.ID == n.cfg.ID {
			continue
		}
		ctx, cancel := context.WithTimeout(n.ctx, peerCheckTimeout)
		st, err := n.peers.Status(ctx, p.ClientAddr)
		cancel()
		if err != nil {
			continue
		}
		for _, m := range st.Nodes {
			if m.ID == n.cfg.ID && m.Incarnation != "" && m.Incarnation != id.Incarnation {
				return fmt.Errorf("%w: peer %s runs cluster %s, which records node %s with incarnation %s, while this node's "+
					"data directory %s is incarnation %s: node %s lost its log and must not bootstrap again. Replace it: run "+
					"\"lockstep cluster remove %s\" against the cluster, empty %s, and start the node with --join instead of "+
					"--bootstrap (docs/operations.md, \"Wiped or damaged data directory\")",
					ErrDataLost, st.NodeID, st.ClusterID, n.cfg.ID, m.Incarnation, n.cfg.DataDir, id.Incarnation,
					n.cfg.ID, n.cfg.ID, n.cfg.DataDir)
			}
		}
	}
	return nil
}

// confirmIdentity records that the cluster knows this node's incarnation: the identity
// file says so, and the node votes from now on.
func (n *Node) confirmIdentity() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.identity.Confirmed {
		id := n.identity
		id.Confirmed = true
		if err := writeIdentity(n.cfg.DataDir, id); err != nil {
			return err
		}
		n.identity = id
		n.log.Info("identity confirmed", "incarnation", id.Incarnation)
	}
	n.seq.AllowVotes()
	return nil
}

// staleIdentity returns ErrStaleIdentity with detail if the cluster records another
// incarnation under this node's id, else nil.
func (n *Node) staleIdentity() error {
	if p := n.stale.Load(); p != nil {
		return *p
	}
	return nil
}

// checkIdentity compares the incarnation the applied log records under this node's id
// with its own (rule 3): another one fences the node, for good, confirmed or not; its own
// confirms an unconfirmed identity, and so does none at all (a bootstrap peer the first
// leader recorded before it knew its incarnation) once the node has caught up, so that
// the record it compares with is the latest. It reports whether the node is fenced.
func (n *Node) checkIdentity() (fenced bool) {
	if n.staleIdentity() != nil {
		return true
	}
	n.mu.Lock()
	mine := n.identity
	n.mu.Unlock()
	// The commit index, then the applied index, then the record: the record reflects at
	// least the applied index. A node replaying the log passes records of its id's earlier
	// incarnations (a node removed and replaced before): another incarnation means a
	// wiped directory only once the state read holds everything committed when the check
	// began.
	commit := n.seq.Stats().CommitIndex
	caughtUp := commit > 0 && n.fsm.Applied() >= commit
	rec := n.fsm.Nodes()[n.cfg.ID]
	confirm := false
	switch {
	case rec.Incarnation != "" && rec.Incarnation != mine.Incarnation && (!caughtUp || (!mine.Confirmed && n.joining.Load())):
		// Look again once the replay has caught up. A node that joins receives the log in
		// pieces (its commit index is the end of each piece, so it seems caught up), and
		// the record of its own incarnation follows the removal of the one before: it
		// waits for that record, unless the cluster refuses its join.
		return false
	case rec.Incarnation != "" && rec.Incarnation != mine.Incarnation:
		err := fmt.Errorf("%w: the cluster records node %s with incarnation %s, this data directory is incarnation %s: "+
			"this node does not vote, lead or serve. Replace it: run \"lockstep cluster remove %s\", empty %s and start it with --join",
			ErrStaleIdentity, n.cfg.ID, rec.Incarnation, mine.Incarnation, n.cfg.ID, n.cfg.DataDir)
		if n.stale.CompareAndSwap(nil, &err) {
			n.log.Error("stale identity", "err", err)
			n.wakeAbstain()
		}
		return true
	case mine.Confirmed:
	case rec.Incarnation == mine.Incarnation:
		confirm = true
	case rec.ID != "":
		st := n.seq.Stats()
		confirm = st.CommitIndex > 0 && n.fsm.Applied()+ReadyMaxLag >= st.CommitIndex
	}
	if confirm {
		if err := n.confirmIdentity(); err != nil {
			n.log.Error("cannot confirm identity", "err", err)
		}
	}
	return false
}

// identityLoop runs checkIdentity for as long as the node runs, until it fences the
// node: every identityCheckInterval while the identity is unconfirmed, every
// identityRecheckInterval after.
func (n *Node) identityLoop() {
	defer n.wg.Done()
	for !n.checkIdentity() {
		n.mu.Lock()
		wait := identityCheckInterval
		if n.identity.Confirmed {
			wait = identityRecheckInterval
		}
		n.mu.Unlock()
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// identityCheckInterval is how often an unconfirmed node looks for its incarnation in the
// applied log.
const identityCheckInterval = 50 * time.Millisecond

// identityRecheckInterval is how often a confirmed node looks whether the cluster records
// another incarnation under its id.
const identityRecheckInterval = 500 * time.Millisecond

// Recover rewrites the Raft membership of the stopped node whose data directory cfg names
// to members, for a cluster that lost its quorum for good (sequencer.Recover does the
// work with hashicorp/raft's RecoverCluster, on the node's own stores). cfg.ID and
// cfg.ClusterID default to the directory's identity; reg and cfg.Replica must be the
// node's. It returns the node's id. The data directory keeps its identity.
func Recover(cfg Config, reg *procedures.Registry, members []Peer) (string, error) {
	id, ok, err := readIdentity(cfg.DataDir)
	if err != nil {
		return "", err
	}
	if ok {
		if cfg.ID == "" {
			cfg.ID = id.NodeID
		}
		if cfg.ClusterID == "" {
			cfg.ClusterID = id.ClusterID
		}
		if id.NodeID != cfg.ID {
			return "", fmt.Errorf("%w: %s is node %s's, not %s's", ErrIdentityMismatch, cfg.DataDir, id.NodeID, cfg.ID)
		}
	}
	cfg.CertsDir, cfg.Insecure = "", true // offline: no port opens, no certificate is needed
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	cfg = cfg.withDefaults()
	fsm, err := replica.New(cfg.Replica, reg, cfg.Logger)
	if err != nil {
		return "", err
	}
	defer fsm.Close()
	servers := make([]sequencer.Server, len(members))
	for i, m := range members {
		servers[i] = sequencer.Server{ID: m.ID, Addr: m.RaftAddr}
	}
	scfg := cfg.Sequencer
	scfg.NodeID, scfg.DataDir, scfg.Logger, scfg.LegacyLog = cfg.ID, cfg.DataDir, cfg.Logger, id.Legacy
	for _, m := range members {
		if m.ID == cfg.ID {
			scfg.RaftAddr = m.RaftAddr
		}
	}
	if err := sequencer.Recover(scfg, fsm, servers); err != nil {
		return "", fmt.Errorf("recover %s: %w", cfg.DataDir, err)
	}
	return cfg.ID, nil
}
