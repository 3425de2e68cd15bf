package wire

// Status is a node's status, the msgpack-encoded Value of an OpStatus response.
type Status struct {
	NodeID           string `msgpack:"id"`
	ClusterID        string `msgpack:"cluster"`
	ClientAddr       string `msgpack:"client"`
	RaftAddr         string `msgpack:"raft"`
	State            string `msgpack:"state"` // Leader, Follower, Candidate, Shutdown
	LeaderID         string `msgpack:"leader"`
	LeaderClientAddr string `msgpack:"leader_client"`
	Term             uint64 `msgpack:"term"`
	LastLogIndex     uint64 `msgpack:"last_index"`
	CommitIndex      uint64 `msgpack:"commit_index"`
	AppliedIndex     uint64 `msgpack:"applied_index"`
	// Partitions is the partition count and Hashes each partition's current state hash.
	Partitions int      `msgpack:"partitions"`
	Hashes     []uint64 `msgpack:"hashes"`
	// HashChecks are the hashes recorded at the leader's hash-check positions, which
	// replicas compare to detect divergence.
	HashChecks []HashCheck `msgpack:"hash_checks"`
	Sessions   int         `msgpack:"sessions"`
	// Divergent and Incompatible say why the node stopped serving; empty when it serves.
	Divergent    string `msgpack:"divergent"`
	Incompatible string `msgpack:"incompatible"`
	Ready        bool   `msgpack:"ready"`
	UptimeMs     int64  `msgpack:"uptime_ms"`
	Batches      uint64 `msgpack:"batches"`
	Inputs       uint64 `msgpack:"inputs"`
	QueueDepth   int    `msgpack:"queue_depth"`
	// Nodes are the cluster's members as recorded in the log, ordered by id.
	Nodes []NodeAddr `msgpack:"nodes"`
}

// NodeAddr is where a cluster member is reached.
type NodeAddr struct {
	ID         string `msgpack:"id" json:"id"`
	RaftAddr   string `msgpack:"raft" json:"raft"`
	ClientAddr string `msgpack:"client" json:"client"`
}

// HashCheck is one replica's partition hashes at a hash-check log index.
type HashCheck struct {
	Index  uint64   `msgpack:"i"`
	Hashes []uint64 `msgpack:"h"`
}
