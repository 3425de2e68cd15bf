package node

import (
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sequencer"
)

// The client-protocol server (server.go) depends on these contracts, not on the
// sequencer's and the replica's structs, so that its request handling can be driven
// without a Raft cluster. Start binds them to the node's Sequencer and FSM.

// proposer is what the server needs of the sequencer: hand it an input for the log.
type proposer interface {
	// Submit queues p for the next batch; p.Done runs once the input is applied or has
	// failed. An error means p was not queued (not the leader, overloaded, closed).
	Submit(p *sequencer.Proposal) error
	// IsLeader reports whether this node leads now.
	IsLeader() bool
}

// stateMachine is what the server needs of the replica: the procedures it runs, its
// partition count, and reads of the state applied so far.
type stateMachine interface {
	// Registry returns the procedures the replica runs.
	Registry() *procedures.Registry
	// Partitions returns the partition count.
	Partitions() int
	// Query runs a read-only procedure on the applied state.
	Query(in *partition.Input) partition.Result
	// Engine returns the partition engine, for stream reads.
	Engine() *partition.Engine
	// Applied returns the index of the last log entry applied.
	Applied() uint64
	// Visible returns a log index at or after every entry whose effects reads may see.
	Visible() uint64
	// Users returns the users table as applied so far (an immutable view).
	Users() *replica.Users
	// ClusterConfig returns the replicated cluster configuration as applied so far.
	ClusterConfig() replica.ClusterConfig
}

var (
	_ proposer     = (*sequencer.Sequencer)(nil)
	_ stateMachine = (*replica.FSM)(nil)
)
