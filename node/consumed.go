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
	// Registry returns the procedures the replica's binary carries.
	Registry() *procedures.Registry
	// LookupProcedure returns the procedure clients invoke as name, a deployed module's
	// or the registry's.
	LookupProcedure(name string) (procedures.Info, bool)
	// Partitions returns the partition count.
	Partitions() int
	// Query runs a read-only procedure on the applied state.
	Query(in *partition.Input) partition.Result
	// streamReader: reads of the applied streams, for consumers and subscribers.
	streamReader
	// Applied returns the index of the last log entry applied.
	Applied() uint64
	// Visible returns a log index at or after every entry whose effects reads may see.
	Visible() uint64
	// Users returns the users table as applied so far (an immutable view).
	Users() *replica.Users
	// ClusterConfig returns the replicated cluster configuration as applied so far.
	ClusterConfig() replica.ClusterConfig
}

// streamReader is what stream reads and subscriptions (stream_read.go, subscribe.go)
// need of the replica: the applied records and bounds of one stream partition, read
// through the state machine rather than its partition engine.
type streamReader interface {
	// ReadStream returns up to max records of stream on partition part from offset on,
	// and the offset to read next; partition.ErrUnknownStream and
	// *partition.OffsetTrimmedError as partition.Partition.ReadStream.
	ReadStream(part int, stream string, offset uint64, max int) ([]partition.Record, uint64, error)
	// StreamInfo describes stream on partition part; false if it does not exist there.
	StreamInfo(part int, stream string) (partition.StreamInfo, bool)
}

var (
	_ proposer     = (*sequencer.Sequencer)(nil)
	_ stateMachine = (*replica.FSM)(nil)
	// The sequencer learns a restored snapshot's batch time from the FSM (batchtime.go).
	_ sequencer.BatchTimeFSM = (*replica.FSM)(nil)
)
