package client

import "github.com/lockstepdb/lockstep/internal/wire"

// Role is a node's Raft role, as its status reports it.
type Role string

// Roles. A node reports the first four; RoleUnknown is the role of a member whose role
// nobody reported.
const (
	// RoleLeader: the node leads; membership changes and writes go to it.
	RoleLeader Role = "Leader"
	// RoleFollower: the node follows a leader (or, in Members, is a voter other than the
	// leader).
	RoleFollower Role = "Follower"
	// RoleCandidate: the node is standing for election; the cluster may have no leader.
	RoleCandidate Role = "Candidate"
	// RoleShutdown: the node's Raft has stopped.
	RoleShutdown Role = "Shutdown"
	// RoleUnknown: not known.
	RoleUnknown Role = ""
)

// Status is a node's status as it reports it: identity, Raft state and indexes, the
// leader it knows, partition hashes, readiness, load and the cluster's members as its log
// records them. The JSON names are those of the node's HTTP /status and of
// `lockstep cluster status --output json` (which print the hashes as hex).
type Status struct {
	// NodeID is the node's id.
	NodeID string `json:"id"`
	// ClusterID is the cluster the node belongs to; empty until the cluster is initialized.
	ClusterID string `json:"cluster"`
	// ClientAddr is the node's client address; RaftAddr its Raft transport's.
	ClientAddr string `json:"client"`
	RaftAddr   string `json:"raft"`
	// AdminAddr is the node's admin HTTPS address (/metrics, /status); empty if it runs
	// none or did not report it. Each of the three is the address the node advertises.
	AdminAddr string `json:"admin,omitempty"`
	// Version is the version of the node's binary: its module version, or "(devel)" with
	// the VCS revision and time it was built from (as `lockstep --version` prints it);
	// empty if the node did not report one.
	Version string `json:"version"`
	// Build is the node binary's build target: Go version, GOARCH and its instruction-set
	// level (GOAMD64, ...); a node joins only a cluster whose leader has the same, because
	// float results depend on it. Empty if the node did not report one.
	Build string `json:"build,omitempty"`
	// MinVersion and MaxVersion are the cluster versions the node's binary runs,
	// ClusterVersion the one its cluster runs, Carries its procedure registrations
	// ("name@N"); zero if the node did not report them.
	MinVersion     uint64   `json:"minv,omitempty"`
	MaxVersion     uint64   `json:"maxv,omitempty"`
	ClusterVersion uint64   `json:"cv,omitempty"`
	Carries        []string `json:"carries,omitempty"`
	// RestFingerprint summarises the binary's replicated tables, processors and
	// changelogs, which must be the cluster's from cluster version 2 on.
	RestFingerprint uint64 `json:"rest,omitempty"`
	// TablesFingerprint summarises the binary's replicated tables and changelogs, which
	// must be the cluster's from cluster version 3 on (processors are then compared one
	// by one, by their active registrations).
	TablesFingerprint uint64 `json:"tables,omitempty"`
	// State is the node's Raft role.
	State Role `json:"state"`
	// LeaderID is the id of the leader the node knows, empty if none; LeaderClientAddr
	// is that leader's client address.
	LeaderID         string `json:"leader"`
	LeaderClientAddr string `json:"leader_client"`
	// Term is the node's current Raft term.
	Term uint64 `json:"term"`
	// LastLogIndex is the last index in the node's Raft log; CommitIndex the last one it
	// knows committed; AppliedIndex the last one its state machine applied.
	LastLogIndex uint64 `json:"last_index"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
	// Partitions is the partition count.
	Partitions int `json:"partitions"`
	// Hashes is each partition's state hash at AppliedIndex; replicas at the same applied
	// index have equal hashes.
	Hashes []uint64 `json:"hashes"`
	// HashChecks are the hashes recorded at the leader's hash-check positions, which the
	// replicas compare to detect divergence, oldest first.
	HashChecks []HashCheck `json:"hash_checks,omitempty"`
	// Sessions is the number of live client sessions.
	Sessions int `json:"sessions"`
	// Divergent says why the node stopped serving after its state diverged from its
	// peers'; empty if it did not.
	Divergent string `json:"divergent"`
	// Incompatible says why the node cannot serve the cluster's log (another partition
	// count or procedure set); empty if it can.
	Incompatible string `json:"incompatible"`
	// Ready reports whether the node serves requests: it can serve, knows a leader and
	// is caught up (one rule on the node, reported alike by /readyz and the metric).
	Ready bool `json:"ready"`
	// NotReadyReason says why Ready is false; empty when it is true.
	NotReadyReason string `json:"not_ready_reason"`
	// UptimeMs is the time since the node started, in milliseconds.
	UptimeMs int64 `json:"uptime_ms"`
	// Batches counts the log entries the node proposed as leader since it started, and
	// Inputs the inputs in them.
	Batches uint64 `json:"batches"`
	Inputs  uint64 `json:"inputs"`
	// QueueDepth is the number of inputs waiting to be batched.
	QueueDepth int `json:"queue_depth"`
	// Insecure is true for a node started with --insecure: no TLS, no authentication.
	Insecure bool `json:"insecure"`
	// Nodes are the cluster's members as recorded in the log the node has applied,
	// ordered by id. Only the leader's list is current: a follower may not have applied a
	// recent join or removal yet.
	Nodes []NodeAddr `json:"nodes,omitempty"`
	// Suffrage is the node's part in the Raft configuration: "voter", "learner" (a
	// non-voter catching up before its automatic promotion), or "" when it is in none.
	Suffrage string `json:"suffrage"`
	// Incarnation identifies the node's data directory: a random id drawn when it was first
	// used. A node whose data directory was wiped comes back with another one.
	Incarnation string `json:"incarnation"`
	// ReadReplica is set on a read replica: a permanent non-voter that serves reads at
	// consistency Any and stream reads.
	ReadReplica bool `json:"read_replica"`
	// Learners are, in the leader's status, the learners waiting for promotion and how far
	// they have caught up.
	Learners []LearnerProgress `json:"learners"`
	// Rebuild is the node's automatic rebuild after a divergence: "" (none), "waiting"
	// (divergent, asking the leader), "refused" (the leader refused: demoting the node
	// would break the quorum), "rebuilding" (replaying a healthy replica's snapshot and
	// the log, until its hashes are verified and it is a voter again) or "fenced" (no
	// automatic rebuild: disabled, or diverged again after one). RebuildNote says why.
	Rebuild     string `json:"rebuild,omitempty"`
	RebuildNote string `json:"rebuild_note,omitempty"`
	// Rebuilds counts the automatic rebuilds of the node's data directory; RebuildFrom is
	// the snapshot index the current or last one started from.
	Rebuilds    int    `json:"rebuilds,omitempty"`
	RebuildFrom uint64 `json:"rebuild_from,omitempty"`
}

// LearnerProgress is how far a learner has caught up, as the leader last saw it.
type LearnerProgress struct {
	// ID is the learner's node id.
	ID string `json:"id"`
	// Applied is the learner's applied index, Target the leader's when it asked.
	Applied uint64 `json:"applied"`
	Target  uint64 `json:"target"`
	// Note says why it is not promoted yet.
	Note string `json:"note,omitempty"`
}

// NodeAddr is where a cluster member is reached.
type NodeAddr struct {
	// ID is the member's node id.
	ID string `json:"id"`
	// RaftAddr is its Raft transport's address; ClientAddr the address clients use.
	RaftAddr   string `json:"raft"`
	ClientAddr string `json:"client"`
	// Incarnation is the member's recorded data-directory incarnation; empty if unknown.
	Incarnation string `json:"incarnation,omitempty"`
}

// HashCheck is one replica's partition state hashes at a hash-check log index.
type HashCheck struct {
	// Index is the log index of the check.
	Index uint64 `json:"index"`
	// Hashes are the partitions' state hashes right after Index was applied.
	Hashes []uint64 `json:"hashes"`
	// Meta is the hash of the replicated state besides the partitions (session table,
	// cluster and node info) at Index; 0 means the node did not report it.
	Meta uint64 `json:"meta,omitempty"`
}

// statusFromWire converts the status a node sent. It is the one place that knows both
// types: a field added to wire.Status needs a line here (TestStatusFromWireCoversEveryField
// fails until it has one).
func statusFromWire(w *wire.Status) Status {
	st := Status{
		NodeID:            w.NodeID,
		ClusterID:         w.ClusterID,
		ClientAddr:        w.ClientAddr,
		RaftAddr:          w.RaftAddr,
		AdminAddr:         w.AdminAddr,
		Version:           w.Version,
		Build:             w.Build,
		MinVersion:        w.MinVersion,
		MaxVersion:        w.MaxVersion,
		ClusterVersion:    w.ClusterVersion,
		Carries:           w.Carries,
		RestFingerprint:   w.RestFingerprint,
		TablesFingerprint: w.TablesFingerprint,
		State:             Role(w.State),
		LeaderID:          w.LeaderID,
		LeaderClientAddr:  w.LeaderClientAddr,
		Term:              w.Term,
		LastLogIndex:      w.LastLogIndex,
		CommitIndex:       w.CommitIndex,
		AppliedIndex:      w.AppliedIndex,
		Partitions:        w.Partitions,
		Hashes:            w.Hashes,
		Sessions:          w.Sessions,
		Divergent:         w.Divergent,
		Incompatible:      w.Incompatible,
		Ready:             w.Ready,
		NotReadyReason:    w.NotReadyReason,
		UptimeMs:          w.UptimeMs,
		Batches:           w.Batches,
		Inputs:            w.Inputs,
		QueueDepth:        w.QueueDepth,
		Insecure:          w.Insecure,
		Suffrage:          w.Suffrage,
		Incarnation:       w.Incarnation,
		ReadReplica:       w.ReadReplica,
		Rebuild:           w.Rebuild,
		RebuildNote:       w.RebuildNote,
		Rebuilds:          w.Rebuilds,
		RebuildFrom:       w.RebuildFrom,
	}
	for _, l := range w.Learners {
		st.Learners = append(st.Learners, LearnerProgress{ID: l.ID, Applied: l.Applied, Target: l.Target, Note: l.Note})
	}
	if len(w.HashChecks) > 0 {
		st.HashChecks = make([]HashCheck, len(w.HashChecks))
		for i, h := range w.HashChecks {
			st.HashChecks[i] = HashCheck{Index: h.Index, Hashes: h.Hashes, Meta: h.Meta}
		}
	}
	if len(w.Nodes) > 0 {
		st.Nodes = make([]NodeAddr, len(w.Nodes))
		for i, n := range w.Nodes {
			st.Nodes[i] = NodeAddr{ID: n.ID, RaftAddr: n.RaftAddr, ClientAddr: n.ClientAddr, Incarnation: n.Incarnation}
		}
	}
	return st
}
