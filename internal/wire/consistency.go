package wire

// Consistency is the consistency level a request asks for (Request.Consistency): how
// fresh the state a read sees must be. The values are part of the protocol; the client
// library and the server both use these constants.
type Consistency uint8

// Consistency levels.
const (
	// ConsistencyLinearizable: the read reflects every write acknowledged before it began.
	// A read-only invocation without a session is served by the leader off the log
	// (ReadIndex); anything else goes through the log. The default (0, not sent).
	ConsistencyLinearizable Consistency = 0
	// ConsistencyAny: a read-only invocation runs on the current state of the replica that
	// receives it, without the log: possibly stale. Only for read-only procedures.
	ConsistencyAny Consistency = 1
	// ConsistencyBounded: a read-only invocation runs on the replica that receives it if
	// that replica can prove its state is at most Request.MaxLag stale: it reflects every
	// write acknowledged more than MaxLag ago, by its own monotonic clock. Otherwise the
	// replica answers NotReady and the client tries another (docs/protocol.md).
	ConsistencyBounded Consistency = 2
	// ConsistencyLinearizableRead: as ConsistencyLinearizable, for a read-only invocation
	// only, without a session: the leader answers it off the log (ReadIndex). A procedure
	// that writes is refused with BadArguments and does not run, so that a write sent as
	// a read never runs without the session that makes it exactly-once.
	ConsistencyLinearizableRead Consistency = 3
)
