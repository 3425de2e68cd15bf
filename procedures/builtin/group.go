package builtin

// Consumer groups. A group is a named set of members that share the partitions of one
// stream; its state lives on the group's home partition, hash(group name) mod P, so every
// group.* invocation but group.list is single-partition with the group's name as its
// partition key. See docs/streams.md, "Consumer groups".

// GroupJoinArgs are the arguments of group.join.
type GroupJoinArgs struct {
	// Stream is the stream the group consumes. The first join fixes it for the group's
	// life; the stream must exist.
	Stream string `msgpack:"s"`
	// Member identifies the member within the group, 1 to 128 bytes. Joining again with an
	// id that is a member starts a new generation too (same assignment): the new
	// incarnation fences the old one, e.g. a restarted process whose predecessor is
	// paused rather than dead.
	Member string `msgpack:"m"`
	// SessionTimeoutMs is how long, in milliseconds of batch time, the member stays in the
	// group without a heartbeat; 0 means DefaultGroupSessionTimeoutMs. 1 to
	// MaxGroupSessionTimeoutMs.
	SessionTimeoutMs int64 `msgpack:"t,omitempty"`
}

// Bounds of consumer groups.
const (
	// DefaultGroupSessionTimeoutMs is the session timeout of a member that names none.
	DefaultGroupSessionTimeoutMs = 10_000
	// MaxGroupSessionTimeoutMs is the longest session timeout, one hour.
	MaxGroupSessionTimeoutMs = 3_600_000
	// MaxGroupMembers is the most members a group holds; a join past it fails with
	// TooLarge.
	MaxGroupMembers = 1000
	// MaxGroupMemberBytes is the longest member id.
	MaxGroupMemberBytes = 128
)

// GroupMemberArgs are the arguments of group.heartbeat and group.leave.
type GroupMemberArgs struct {
	// Member is the member's id.
	Member string `msgpack:"m"`
}

// GroupAssignment is the result of group.join and group.heartbeat: the group's current
// generation and the member's share of it.
type GroupAssignment struct {
	// Generation is the group's generation: it grows by one whenever the members change
	// (a join, a leave, an expiry), and a commit must name the current one.
	Generation uint64 `msgpack:"g"`
	// Stream is the stream the group consumes.
	Stream string `msgpack:"s"`
	// Partitions are the stream partitions assigned to the member in this generation,
	// ascending; empty when the group has more members than the stream has partitions.
	Partitions []int32 `msgpack:"p"`
	// Members is the number of members in this generation.
	Members int32 `msgpack:"n"`
}

// GroupCommitArgs are the arguments of group.commit and of procedures.CommitGroupOffset:
// the offset member commits for one partition of the group's stream.
type GroupCommitArgs struct {
	// Group names the group. group.commit takes it from its partition key and ignores
	// this field; CommitGroupOffset needs it.
	Group string `msgpack:"grp,omitempty"`
	// Member is the committing member's id.
	Member string `msgpack:"m"`
	// Generation is the generation the member holds its assignment in; an older one fails
	// with StaleGeneration, so a zombie member commits nothing.
	Generation uint64 `msgpack:"g"`
	// Partition is the stream partition, which must be assigned to Member in Generation.
	Partition int32 `msgpack:"p"`
	// Offset is the next offset to consume on that partition: every record below it has
	// been processed.
	Offset uint64 `msgpack:"o"`
}

// GroupOffset is one committed offset.
type GroupOffset struct {
	// Partition is the stream partition.
	Partition int32 `msgpack:"p"`
	// Offset is the committed next offset to consume.
	Offset uint64 `msgpack:"o"`
	// Generation is the generation it was committed in.
	Generation uint64 `msgpack:"g"`
}

// GroupMemberInfo describes one member of a group.
type GroupMemberInfo struct {
	// Member is the member's id.
	Member string `msgpack:"m"`
	// SessionTimeoutMs is the member's session timeout.
	SessionTimeoutMs int64 `msgpack:"t"`
	// LastHeartbeatMs is the batch time (Unix ms) of its last join or heartbeat.
	LastHeartbeatMs int64 `msgpack:"h"`
	// Partitions are the stream partitions assigned to it in the current generation.
	Partitions []int32 `msgpack:"p"`
}

// GroupDescription is the result of group.describe.
type GroupDescription struct {
	// Group is the group's name.
	Group string `msgpack:"grp"`
	// Stream is the stream the group consumes.
	Stream string `msgpack:"s"`
	// Generation is the current generation.
	Generation uint64 `msgpack:"g"`
	// Members are the members, ordered by id (the order of the assignment function).
	Members []GroupMemberInfo `msgpack:"m"`
	// Offsets are the committed offsets, by partition; a partition never committed is
	// absent.
	Offsets []GroupOffset `msgpack:"o"`
}

// GroupSummary is one group of group.list.
type GroupSummary struct {
	// Group is the group's name.
	Group string `msgpack:"grp"`
	// Stream is the stream the group consumes.
	Stream string `msgpack:"s"`
	// Generation is the current generation.
	Generation uint64 `msgpack:"g"`
	// Members is the number of members.
	Members int32 `msgpack:"n"`
}
