package builtin

// Names of the built-in procedures, as registered by procedures.RegisterBuiltins.
const (
	KVPut             = "kv.put"
	KVGet             = "kv.get"
	KVDelete          = "kv.delete"
	KVCas             = "kv.cas"
	CounterAdd        = "counter.add"
	CounterGet        = "counter.get"
	BankOpen          = "bank.open"
	BankTransfer      = "bank.transfer"
	BankTotal         = "bank.total"
	VoterInit         = "voter.init"
	VoterVote         = "voter.vote"
	VoterResults      = "voter.results"
	VoterAreaTotals   = "voter.area_totals"
	StreamAppend      = "stream.append"
	StreamAppendBatch = "stream.append_batch"
	StreamCreate      = "stream.create"
	StreamDelete      = "stream.delete"
	StreamList        = "stream.list"
	StreamDescribe    = "stream.describe"
)

// NoArgs is the argument type of procedures that take no arguments, built-in or not.
// Absent or empty argument bytes, a msgpack nil and an empty map all decode to it.
type NoArgs struct{}

// Names of the consumer-group built-ins (see GroupJoinArgs and the other Group types).
const (
	GroupJoin      = "group.join"
	GroupHeartbeat = "group.heartbeat"
	GroupLeave     = "group.leave"
	GroupCommit    = "group.commit"
	GroupOffsets   = "group.offsets"
	GroupDescribe  = "group.describe"
	GroupList      = "group.list"
)
