package wire

// Status is a node's status, the msgpack-encoded Value of an OpStatus response. Its JSON
// names, used by the HTTP admin and the CLI, are the same as its msgpack names.
type Status struct {
	NodeID     string `msgpack:"id" json:"id"`
	ClusterID  string `msgpack:"cluster" json:"cluster"`
	ClientAddr string `msgpack:"client" json:"client"`
	RaftAddr   string `msgpack:"raft" json:"raft"`
	// AdminAddr is the node's admin HTTPS address as it advertises it; empty from a node
	// without an admin server or that does not report it.
	AdminAddr string `msgpack:"admin,omitempty" json:"admin,omitempty"`
	// Version is the node binary's version (internal/buildinfo.Version); empty from a
	// node that does not report it.
	Version string `msgpack:"version" json:"version"`
	// Build is the node binary's build target (internal/buildinfo.Target); empty from a
	// node that does not report it.
	Build string `msgpack:"build,omitempty" json:"build,omitempty"`
	// MinVersion and MaxVersion are the cluster versions the binary runs, ClusterVersion
	// the one the cluster runs (as this node applied it), and Carries the binary's
	// procedure registrations ("name@N"); zero from a node that does not report them.
	MinVersion     uint64   `msgpack:"minv,omitempty" json:"minv,omitempty"`
	MaxVersion     uint64   `msgpack:"maxv,omitempty" json:"maxv,omitempty"`
	ClusterVersion uint64   `msgpack:"cv,omitempty" json:"cv,omitempty"`
	Carries        []string `msgpack:"carries,omitempty" json:"carries,omitempty"`
	// RestFingerprint is procedures.Registry.RestFingerprint of the binary: its replicated
	// tables, processors and changelogs, which must be the cluster's.
	RestFingerprint uint64 `msgpack:"rest,omitempty" json:"rest,omitempty"`
	// TablesFingerprint is procedures.Registry.TablesFingerprint of the binary: its
	// replicated tables and changelogs, which must be the cluster's from cluster version 3.
	TablesFingerprint uint64 `msgpack:"tables,omitempty" json:"tables,omitempty"`
	State             string `msgpack:"state" json:"state"` // Leader, Follower, Candidate, Shutdown
	LeaderID          string `msgpack:"leader" json:"leader"`
	LeaderClientAddr  string `msgpack:"leader_client" json:"leader_client"`
	Term              uint64 `msgpack:"term" json:"term"`
	LastLogIndex      uint64 `msgpack:"last_index" json:"last_index"`
	CommitIndex       uint64 `msgpack:"commit_index" json:"commit_index"`
	AppliedIndex      uint64 `msgpack:"applied_index" json:"applied_index"`
	// Partitions is the partition count and Hashes each partition's current state hash.
	Partitions int      `msgpack:"partitions" json:"partitions"`
	Hashes     []uint64 `msgpack:"hashes" json:"hashes"`
	// HashChecks are the hashes recorded at the leader's hash-check positions, which
	// replicas compare to detect divergence.
	HashChecks []HashCheck `msgpack:"hash_checks" json:"hash_checks,omitempty"`
	Sessions   int         `msgpack:"sessions" json:"sessions"`
	// Divergent and Incompatible say why the node stopped serving; empty when it serves.
	Divergent    string `msgpack:"divergent" json:"divergent"`
	Incompatible string `msgpack:"incompatible" json:"incompatible"`
	Ready        bool   `msgpack:"ready" json:"ready"`
	// NotReadyReason says why Ready is false (node.Node.Readiness); empty when it is true.
	NotReadyReason string `msgpack:"not_ready_reason" json:"not_ready_reason"`
	UptimeMs       int64  `msgpack:"uptime_ms" json:"uptime_ms"`
	Batches        uint64 `msgpack:"batches" json:"batches"`
	Inputs         uint64 `msgpack:"inputs" json:"inputs"`
	QueueDepth     int    `msgpack:"queue_depth" json:"queue_depth"`
	// Insecure is true for a node started with --insecure: no TLS, no authentication.
	Insecure bool `msgpack:"insecure" json:"insecure"`
	// Nodes are the cluster's members as recorded in the log, ordered by id.
	Nodes []NodeAddr `msgpack:"nodes" json:"nodes,omitempty"`
	// Suffrage is the node's part in the Raft configuration it knows: "voter", "learner"
	// (a non-voter catching up before its promotion), or "" when it is in none.
	Suffrage string `msgpack:"suffrage" json:"suffrage"`
	// Incarnation identifies the node's data directory (node.DataIdentity).
	Incarnation string `msgpack:"incarnation" json:"incarnation"`
	// ReadReplica is set on a read replica: a permanent non-voter serving reads.
	ReadReplica bool `msgpack:"read_replica" json:"read_replica"`
	// Learners are, on the leader, the learners waiting for promotion and how far they
	// have caught up; empty elsewhere.
	Learners []LearnerProgress `msgpack:"learners" json:"learners"`
	// Rebuild is the node's automatic rebuild after a divergence (node/rebuild.go): ""
	// (none), "waiting" (divergent, asking the leader), "refused" (the leader refused: the
	// quorum would break; it asks again), "rebuilding" (state discarded, replaying a
	// snapshot and the log, not yet verified and promoted) or "fenced" (no automatic
	// rebuild: disabled, or diverged again after one). RebuildNote says why; Rebuilds counts
	// the automatic rebuilds of this node's data directory; RebuildFrom is the index of the
	// snapshot the current or last rebuild started from.
	Rebuild     string `msgpack:"rebuild,omitempty" json:"rebuild,omitempty"`
	RebuildNote string `msgpack:"rebuild_note,omitempty" json:"rebuild_note,omitempty"`
	Rebuilds    int    `msgpack:"rebuilds,omitempty" json:"rebuilds,omitempty"`
	RebuildFrom uint64 `msgpack:"rebuild_from,omitempty" json:"rebuild_from,omitempty"`
}

// LearnerProgress is how far a learner (a non-voter waiting for promotion) has caught up,
// as the leader last saw it.
type LearnerProgress struct {
	ID string `msgpack:"id" json:"id"`
	// Applied is the learner's applied index, Target the leader's applied index when it
	// asked; the learner is promoted once Target-Applied is within the bound.
	Applied uint64 `msgpack:"applied" json:"applied"`
	Target  uint64 `msgpack:"target" json:"target"`
	// Note says why it is not promoted yet (unreachable, catching up, quorum check).
	Note string `msgpack:"note,omitempty" json:"note,omitempty"`
}

// NodeAddr is where a cluster member is reached.
type NodeAddr struct {
	ID         string `msgpack:"id" json:"id"`
	RaftAddr   string `msgpack:"raft" json:"raft"`
	ClientAddr string `msgpack:"client" json:"client"`
	// Incarnation is the member's recorded data-directory incarnation; empty if unknown.
	Incarnation string `msgpack:"inc,omitempty" json:"incarnation,omitempty"`
}

// HashCheck is one replica's state hashes at a hash-check log index: one per partition,
// and Meta, the hash of the replicated state besides the partitions (sessions, cluster and
// node info). A Meta of 0, as from a node that does not send it, means unknown.
type HashCheck struct {
	Index  uint64   `msgpack:"i" json:"index"`
	Hashes []uint64 `msgpack:"h" json:"hashes"`
	Meta   uint64   `msgpack:"m" json:"meta,omitempty"`
}
