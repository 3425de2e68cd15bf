package wire

// Consistency is the consistency level a request asks for (Request.Consistency): how
// fresh the state a read sees must be. The values are part of the protocol; the client
// library and the server both use these constants.
type Consistency uint8

// Consistency levels.
const (
	// ConsistencyLinearizable: the request goes through the log at the leader, so a read
	// reflects every write acknowledged before it began. The default (0, not sent).
	ConsistencyLinearizable Consistency = 0
	// ConsistencyAny: a read-only invocation runs on the current state of the replica that
	// receives it, without the log: possibly stale. Only for read-only procedures.
	ConsistencyAny Consistency = 1
)
