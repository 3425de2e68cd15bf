package wire

import "strconv"

// ProtocolVersion is the protocol version this package speaks, sent in every Hello.
const ProtocolVersion uint32 = 1

// MaxListLen is the most elements a decoded list (Request.Keys, Response.Records) may
// hold. It bounds the memory a small hostile frame can make a decoder allocate.
const MaxListLen = 1 << 16

// Hello is the first frame each way on a connection. The client sends its Hello; the
// server answers with its own Hello, or with an error Response (ID 0, code
// CodeProtocolVersion or CodeClusterMismatch) and closes the connection.
type Hello struct {
	// Version is the sender's protocol version, ProtocolVersion.
	Version uint32 `msgpack:"v,omitempty"`
	// ClusterID names the cluster the sender belongs to or expects. Empty matches any.
	ClusterID string `msgpack:"cid,omitempty"`
	// NodeID is the server's node id; sent by the server only.
	NodeID string `msgpack:"nid,omitempty"`
}

// HelloReply is the server's Hello as received by ClientHandshake; its NodeID is set.
type HelloReply = Hello

// Op is the operation a Request asks for.
type Op uint8

// Operations. Values are part of the protocol and never change.
const (
	// OpInvoke runs a procedure. Uses Session, Seq, AckThrough, Procedure, Key and HasKey
	// or Keys, Args and Consistency. The Response carries the result in Value.
	OpInvoke Op = 1
	// OpOpenSession opens a client session. Uses no other field; the Response carries the
	// new session id in Session.
	OpOpenSession Op = 2
	// OpCloseSession closes the session named by Session.
	OpCloseSession Op = 3
	// OpStatus asks for the node's status. The Response carries it, msgpack-encoded, in Value.
	OpStatus Op = 4
	// OpStreamRead reads records of a stream. Uses Stream, Partition, Offset, Max, Full
	// and Consistency. The Response carries the records (in Entries with Full, else the
	// values alone in Records) and the offset to read from next in NextOffset. Without
	// Full, the records returned have consecutive offsets ending just before NextOffset.
	OpStreamRead Op = 5
	// OpPing asks for an empty OK Response, to check the connection.
	OpPing Op = 6
	// OpJoin asks the leader to add a node as a voter. Args is the msgpack encoding of a
	// JoinArgs; the leader refuses a node whose partition count, procedure set or build
	// target differs.
	OpJoin Op = 7
	// OpRemove asks the leader to remove the voter whose id is Key.
	OpRemove Op = 8
	// OpTransferLeader asks the leader to hand leadership to the voter whose id is Key, or
	// to any up-to-date voter when Key is empty.
	OpTransferLeader Op = 9
	// OpProcedures asks for the node's procedure catalogue. Uses no other field; any node
	// answers, from its registry, without the log. The Response carries the catalogue in
	// Value: a msgpack array of procedure entries (the encoding of []schema.Procedure,
	// package procedures/schema; docs/protocol.md lists the keys).
	OpProcedures Op = 10
	// OpProcessors asks for the node's processors' state per partition. Uses no other
	// field; any node answers, ready or not, from its applied state, without the log. The
	// Response carries a msgpack array of ProcessorStatus in Value, by processor name, then
	// partition.
	OpProcessors Op = 11
	// OpSubscribe opens a push subscription to one stream partition (see Subscriptions in
	// the package documentation). Uses Sub (the subscription's id, chosen by the client,
	// unique among the connection's live subscriptions), Stream, Partition, Offset (the
	// first offset wanted), Earliest, MinIndex, and the initial credit in Max (records)
	// and Bytes. The OK Response comes before any push of the subscription.
	OpSubscribe Op = 12
	// OpCredit grants the subscription Sub more credit: Max records and Bytes bytes. It is
	// one-way: the node sends no Response (a grant to a subscription that has ended is
	// ignored), and the Request's ID is 0.
	OpCredit Op = 13
	// OpUnsubscribe ends the subscription Sub. The OK Response comes after the last push
	// of the subscription; ending one that has ended already is OK too.
	OpUnsubscribe Op = 14
	// OpUsers reads or changes the cluster's users table (docs/security.md, Roles): Args is
	// the msgpack encoding of a UserArgs. It needs the admin role and goes through the log,
	// on the leader. The Response carries the table after the command, a msgpack array of
	// UserInfo ordered by name, in Value.
	OpUsers Op = 15
	// OpConfirmLeader is a node-to-node call of the ReadIndex protocol (docs/protocol.md,
	// "Reads off the log"): the leader LeaderID asks a voter whether it still follows it in
	// term Term. OK means yes: the voter's current Raft term is Term and its leader is
	// LeaderID, as it stands when it answers; NotLeader means no. It reads no state and
	// changes none.
	OpConfirmLeader Op = 16
	// OpReadIndex asks the leader for a read index: a log index such that a replica that
	// has applied it holds every write acknowledged before the request was sent. The
	// leader confirms its leadership with a quorum first (OpConfirmLeader), once for all
	// the reads waiting at that moment. Uses no other field; the Response carries the
	// index in Index. A follower serving a bounded-staleness read asks it.
	OpReadIndex Op = 17
	// OpRebuild asks the leader to rebuild the divergent voter whose id is Key (a node
	// asks for itself): the leader checks that the node reports itself divergent and that
	// the voters alive without it make a quorum, demotes it to non-voter, and compacts its
	// log to a snapshot, which the node installs once it has discarded its state. The
	// Response carries the snapshot's index (the rebuild point) in NextOffset; an OK
	// Response without NextOffset is a refusal (the quorum), with the reason in Value.
	OpRebuild Op = 18
	// OpClusterConfig reads or changes the cluster's replicated configuration
	// (docs/operations.md, Cluster configuration): Args is the msgpack encoding of a
	// ClusterConfigArgs. It needs the admin role and goes through the log, on the leader,
	// so every replica changes at the same log index. A bad setting name or value is
	// BadArguments and changes nothing. The Response carries the configuration after the
	// command, a msgpack ClusterConfigInfo, in Value.
	OpClusterConfig Op = 19
	// OpBackup reads a backup of the node's whole replicated state at one log index
	// (docs/operations.md, "Backup and restore"). It needs the admin role; any node
	// answers, from a snapshot of its applied state, while writes go on. Without Sub, it
	// starts a backup: the node snapshots its state and the Response carries a msgpack
	// BackupStart in Value. Then each OpBackup with Sub the backup's id and Offset the
	// bytes received so far reads the next part of the file, at most Max bytes (0: the
	// node's choice), in Value; the node ends the backup when its last byte is read, when
	// another starts on the connection, or when the connection closes. An Offset other
	// than the next byte is BadArguments.
	OpBackup Op = 20
	// OpSQL serves one SQL command (docs/sql.md, "Surfaces"): Args is the msgpack
	// encoding of an SQLArgs, and Consistency says how fresh the state it reads must be
	// (the leader off the log by default, or any node, or bounded by MaxLag). The node
	// answers, in Value, a msgpack SQLResult: a SELECT, SHOW or EXPLAIN is answered from
	// state; CREATE is compiled against the deployed catalogue and answered as the
	// module to deploy (the client deploys it with OpClusterConfig, which needs admin),
	// DROP as the modules to remove, INSERT as the records to append (the client appends
	// them through its exactly-once session). A bad command is BadArguments carrying the
	// place in the SQL text; nothing changes.
	OpSQL Op = 21
)

// SQLArgs is the argument of OpSQL.
type SQLArgs struct {
	// Text is the SQL command.
	Text string `msgpack:"text"`
}

// SQL result kinds (SQLResult.Kind).
const (
	SQLRows   = "rows"
	SQLDeploy = "deploy"
	SQLDrop   = "drop"
	SQLInsert = "insert"
)

// SQLResult is the answer to OpSQL.
type SQLResult struct {
	Kind string `msgpack:"kind"`
	// Columns and Rows are a SQLRows answer: the column names and SQL types, and the
	// rows, each value of its column's type (docs/sql.md: timestamps and intervals as
	// milliseconds) or nil.
	Columns []SQLColumn `msgpack:"cols,omitempty"`
	Rows    [][]any     `msgpack:"rows,omitempty"`
	// Module and Source are a SQLDeploy answer: deploy Source as the module Module, of
	// kind ModuleKind ("sql" when empty; "source" for a CREATE SOURCE).
	Module     string `msgpack:"mod,omitempty"`
	Source     []byte `msgpack:"src,omitempty"`
	ModuleKind string `msgpack:"mkind,omitempty"`
	// Modules are a SQLDrop answer: the modules to remove.
	Modules []string `msgpack:"mods,omitempty"`
	// Appends are a SQLInsert answer, in order.
	Appends []SQLAppend `msgpack:"appends,omitempty"`
}

// SQLColumn is one column of a SQLRows answer.
type SQLColumn struct {
	Name string `msgpack:"n"`
	Type string `msgpack:"t"`
}

// SQLAppend is one record an INSERT appends.
type SQLAppend struct {
	Stream      string `msgpack:"s"`
	Key         []byte `msgpack:"k"`
	Value       []byte `msgpack:"v"`
	EventTimeMs int64  `msgpack:"e,omitempty"`
}

// BackupStart is the answer to the OpBackup that starts a backup.
type BackupStart struct {
	// ID names the backup in the OpBackup requests that read it.
	ID uint64 `msgpack:"id"`
	// Index is the log index the backup's state is at.
	Index uint64 `msgpack:"idx"`
	// Size is the length of the whole backup file, in bytes.
	Size int64 `msgpack:"size"`
	// Header is the file's header line (package backup's Header, as JSON).
	Header []byte `msgpack:"hdr"`
}

// Cluster configuration commands (ClusterConfigArgs.Cmd).
const (
	// ConfigGet changes nothing: the Response has the configuration.
	ConfigGet = "get"
	// ConfigSet changes the settings Set, all or none.
	ConfigSet = "set"
	// ConfigUpgrade moves the cluster version to To, if every member supports it.
	ConfigUpgrade = "upgrade"
	// ConfigActivate makes the registrations Activate ("name@N") the running versions.
	ConfigActivate = "activate"
	// ConfigDeployModule deploys (or replaces) the module Module of kind Kind with Source
	// through the log (cluster version 3 on).
	ConfigDeployModule = "deploy-module"
	// ConfigRemoveModule removes the module Module through the log.
	ConfigRemoveModule = "remove-module"
	// ConfigModules lists the deployed modules, with sources and histories, as the
	// answering node applied them (not through the log); the value is []ModuleInfo.
	ConfigModules = "modules"
)

// ClusterConfigArgs is the argument of OpClusterConfig.
type ClusterConfigArgs struct {
	// Cmd is ConfigGet or ConfigSet.
	Cmd string `msgpack:"cmd"`
	// Set are the settings a ConfigSet changes, each name at most once.
	Set []ConfigSetting `msgpack:"set,omitempty"`
	// To is the cluster version a ConfigUpgrade moves to.
	To uint64 `msgpack:"to,omitempty"`
	// Activate are the registrations a ConfigActivate makes active, as "name@N".
	Activate []string `msgpack:"activate,omitempty"`
	// Module, Kind and Source are a ConfigDeployModule's (Module alone a
	// ConfigRemoveModule's).
	Module string `msgpack:"mod,omitempty"`
	Kind   string `msgpack:"kind,omitempty"`
	Source []byte `msgpack:"src,omitempty"`
	// Modules, with Module empty, make a ConfigRemoveModule remove these modules together,
	// all or none, in one log entry (cluster version 5 on: an older leader finds no
	// module "" and removes nothing).
	Modules []string `msgpack:"mods,omitempty"`
}

// ModuleInfo is one deployed module (ConfigModules).
type ModuleInfo struct {
	Name       string              `msgpack:"n"`
	Kind       string              `msgpack:"k"`
	Version    uint32              `msgpack:"v"`
	Active     bool                `msgpack:"a"`
	Source     []byte              `msgpack:"src,omitempty"`
	History    []ModuleVersionInfo `msgpack:"hist"`
	Procedures []string            `msgpack:"procs,omitempty"`
	Processors []string            `msgpack:"processors,omitempty"`
}

// ModuleVersionInfo is one deploy or removal of a module.
type ModuleVersionInfo struct {
	Version    uint32 `msgpack:"v"`
	Index      uint64 `msgpack:"i"`
	SourceHash uint64 `msgpack:"h"`
	Removed    bool   `msgpack:"rm,omitempty"`
}

// ConfigSetting is one setting of the cluster configuration: its name and its value as
// text (a Go duration such as "2m0s", or a decimal integer).
type ConfigSetting struct {
	Name  string `msgpack:"name"`
	Value string `msgpack:"value"`
}

// ClusterConfigInfo is the cluster configuration, as OpClusterConfig answers it.
type ClusterConfigInfo struct {
	// Version counts the configuration's changes: 1 for the values the cluster was
	// created with; 0 for a cluster created before the configuration was replicated.
	Version uint64 `msgpack:"v"`
	// Index is the log index at which the configuration took its current values.
	Index uint64 `msgpack:"i"`
	// Settings are every setting, by name.
	Settings []ConfigSetting `msgpack:"settings"`
	// ClusterVersion is the active cluster version (0: a cluster created before cluster
	// versions, which runs as 1); Active the running procedure registrations, "name@N",
	// from cluster version 2 on.
	ClusterVersion uint64   `msgpack:"cv,omitempty"`
	Active         []string `msgpack:"active,omitempty"`
	// Modules are the active modules, "name@N" (N the module's version), from cluster
	// version 3 on.
	Modules []string `msgpack:"mods,omitempty"`
}

// User commands (UserArgs.Cmd).
const (
	// UserAdd adds the user Name with Role; a user of that name must not exist.
	UserAdd = "add"
	// UserRemove removes the user Name.
	UserRemove = "remove"
	// UserGrant lets the writer Name invoke Procedures; "*" among them lets it invoke every
	// procedure again.
	UserGrant = "grant"
	// UserRevoke takes Procedures from the writer Name; "*" leaves it none.
	UserRevoke = "revoke"
	// UserList changes nothing: the Response lists the users.
	UserList = "list"
)

// UserArgs is the argument of OpUsers.
type UserArgs struct {
	// Cmd is one of UserAdd, UserRemove, UserGrant, UserRevoke, UserList.
	Cmd string `msgpack:"cmd"`
	// Name is the user: a client certificate's common name.
	Name string `msgpack:"name,omitempty"`
	// Role is the new user's role (UserAdd): "admin", "writer" or "reader".
	Role string `msgpack:"role,omitempty"`
	// Procedures are the procedures granted or revoked, or "*" for all.
	Procedures []string `msgpack:"procs,omitempty"`
}

// UserInfo is one user of the cluster's users table, as OpUsers lists it.
type UserInfo struct {
	// Name is the user's name, its certificate's common name.
	Name string `msgpack:"name"`
	// Role is "admin", "writer" or "reader".
	Role string `msgpack:"role"`
	// Limited is true for a writer that may invoke only Procedures (and read-only ones).
	Limited bool `msgpack:"limited,omitempty"`
	// Procedures are a limited writer's granted procedures, sorted.
	Procedures []string `msgpack:"procs,omitempty"`
}

// JoinArgs describes a node asking to join a cluster (OpJoin).
type JoinArgs struct {
	// ID is the joining node's unique id.
	ID string `msgpack:"id"`
	// RaftAddr and ClientAddr are where the node's Raft transport and clients reach it.
	RaftAddr   string `msgpack:"raft"`
	ClientAddr string `msgpack:"client"`
	// Partitions is the node's partition count; it must equal the cluster's.
	Partitions int `msgpack:"p"`
	// Procedures is the fingerprint of the node's procedure set; it must equal the cluster's.
	Procedures uint64 `msgpack:"procs"`
	// Incarnation identifies the joining node's data directory (node.DataIdentity); a node
	// whose recorded incarnation differs has lost its data and must be removed first.
	// Empty from a node that does not send it.
	Incarnation string `msgpack:"inc,omitempty"`
	// ReadReplica asks to join as a read replica: a non-voter never promoted.
	ReadReplica bool `msgpack:"rr,omitempty"`
	// Build is the joining binary's build target (internal/buildinfo.Target: Go version,
	// GOARCH and its level, such as GOAMD64); it must equal the leader's, because float
	// results depend on it. Empty from a node that does not send it, which is refused.
	Build string `msgpack:"build,omitempty"`
}

// String returns the operation's name, or "Op(n)" for an unknown one.
func (o Op) String() string {
	switch o {
	case OpInvoke:
		return "Invoke"
	case OpOpenSession:
		return "OpenSession"
	case OpCloseSession:
		return "CloseSession"
	case OpStatus:
		return "Status"
	case OpStreamRead:
		return "StreamRead"
	case OpPing:
		return "Ping"
	case OpJoin:
		return "Join"
	case OpRemove:
		return "Remove"
	case OpTransferLeader:
		return "TransferLeader"
	case OpProcedures:
		return "Procedures"
	case OpProcessors:
		return "Processors"
	case OpSubscribe:
		return "Subscribe"
	case OpCredit:
		return "Credit"
	case OpUnsubscribe:
		return "Unsubscribe"
	case OpUsers:
		return "Users"
	case OpConfirmLeader:
		return "ConfirmLeader"
	case OpReadIndex:
		return "ReadIndex"
	case OpRebuild:
		return "Rebuild"
	case OpClusterConfig:
		return "ClusterConfig"
	case OpSQL:
		return "SQL"
	case OpBackup:
		return "Backup"
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Request is a client's request. Every request carries ID and Op; which other fields are
// used depends on Op (see the Op constants). Unused fields are left zero and are not sent.
type Request struct {
	// ID identifies the request among those in flight on its connection and is echoed in
	// the Response. Chosen by the client; 0 is reserved for connection-level errors.
	ID uint64 `msgpack:"id,omitempty"`
	// Op is the operation.
	Op Op `msgpack:"op,omitempty"`
	// Session is the client session the request belongs to, 0 for none
	// (OpInvoke, OpCloseSession).
	Session uint64 `msgpack:"ses,omitempty"`
	// Seq numbers the request within its session, from 1; a retry reuses the number so the
	// request runs at most once (OpInvoke).
	Seq uint64 `msgpack:"seq,omitempty"`
	// AckThrough tells the server the client has received the results of every Seq up to
	// and including this one, so it may free them (OpInvoke).
	AckThrough uint64 `msgpack:"ack,omitempty"`
	// Procedure is the name of the procedure to run (OpInvoke).
	Procedure string `msgpack:"proc,omitempty"`
	// Key is the partition key of a single-partition invocation; valid if HasKey (OpInvoke).
	Key []byte `msgpack:"key,omitempty"`
	// HasKey tells an empty Key from no key: without a key and without Keys, the
	// invocation is multi-partition over every partition (OpInvoke).
	HasKey bool `msgpack:"hk,omitempty"`
	// Keys is the explicit key set of a multi-partition invocation; it runs on the
	// partitions these keys hash to. Optional; at most MaxListLen keys (OpInvoke).
	Keys [][]byte `msgpack:"keys,omitempty"`
	// Args is the msgpack encoding of the procedure's argument value (OpInvoke).
	Args []byte `msgpack:"args,omitempty"`
	// Consistency is the read consistency level; 0 is the default,
	// ConsistencyLinearizable (OpInvoke, OpStreamRead).
	Consistency Consistency `msgpack:"cons,omitempty"`
	// Stream is the output stream's name (OpStreamRead).
	Stream string `msgpack:"strm,omitempty"`
	// Partition is the stream partition to read (OpStreamRead).
	Partition int32 `msgpack:"part,omitempty"`
	// Offset is the offset of the first record to read (OpStreamRead).
	Offset uint64 `msgpack:"off,omitempty"`
	// Max is the most records to return; the server may return fewer, and never more than
	// MaxListLen (OpStreamRead).
	Max uint32 `msgpack:"max,omitempty"`
	// Full asks for full records (offset, key, value, event time) in Response.Entries,
	// which may skip the offsets key compaction removed (OpStreamRead).
	Full bool `msgpack:"full,omitempty"`
	// Sub is the subscription's id (OpSubscribe, OpCredit, OpUnsubscribe).
	Sub uint64 `msgpack:"sub,omitempty"`
	// Bytes is credit in bytes, counted as StreamRecordSize per record (OpSubscribe,
	// OpCredit); Max is the credit in records.
	Bytes uint64 `msgpack:"bytes,omitempty"`
	// MinIndex asks the node to wait until it has applied the log up to this index before
	// it starts the subscription: a client moving a subscription to another replica sends
	// the highest Response.Index it received, so that the new replica holds at least
	// every record already delivered (OpSubscribe).
	MinIndex uint64 `msgpack:"midx,omitempty"`
	// Earliest starts the subscription at the partition's first retained offset when
	// Offset is below it, instead of failing with CodeOffsetTrimmed (OpSubscribe).
	Earliest bool `msgpack:"early,omitempty"`
	// Term is the Raft term of the leader asking (OpConfirmLeader).
	Term uint64 `msgpack:"term,omitempty"`
	// LeaderID is the node id of the leader asking (OpConfirmLeader).
	LeaderID string `msgpack:"lid,omitempty"`
	// MaxLag is the staleness bound of a ConsistencyBounded read, in nanoseconds: the
	// answer reflects every write acknowledged more than MaxLag before the replica answers.
	// It must be positive with ConsistencyBounded and is ignored otherwise (OpInvoke).
	MaxLag uint64 `msgpack:"mlag,omitempty"`
}

// Response is the server's answer to a Request, matched to it by ID. Responses on one
// connection may arrive in any order.
type Response struct {
	// ID is the ID of the Request answered; 0 for a connection-level error, sent just
	// before the server closes the connection.
	ID uint64 `msgpack:"id,omitempty"`
	// Code is the outcome; CodeOK or one of the catalogue's error codes.
	Code Code `msgpack:"code,omitempty"`
	// Message describes a non-OK outcome, for people; never match on it.
	Message string `msgpack:"msg,omitempty"`
	// Value is the result: the msgpack encoding of the procedure's result (OpInvoke), of
	// the node status (OpStatus) or of the procedure catalogue (OpProcedures).
	Value []byte `msgpack:"val,omitempty"`
	// Leader is the client address of the leader, set with CodeNotLeader when known.
	Leader string `msgpack:"ldr,omitempty"`
	// Session is the id of the session opened (OpOpenSession).
	Session uint64 `msgpack:"ses,omitempty"`
	// Records are the stream records read, in offset order (OpStreamRead).
	Records [][]byte `msgpack:"recs,omitempty"`
	// NextOffset is the offset to read from next (OpStreamRead); with CodeOffsetTrimmed,
	// the first offset available.
	NextOffset uint64 `msgpack:"next,omitempty"`
	// Entries are the full stream records read, in offset order (OpStreamRead with Full,
	// and pushes).
	Entries []StreamRecord `msgpack:"ents,omitempty"`
	// Sub, when not 0, makes the Response a push of subscription Sub rather than an answer
	// to a Request (ID is then 0): records in Entries and the offset after them in
	// NextOffset, or, with a Code other than CodeOK, the end of the subscription.
	Sub uint64 `msgpack:"sub,omitempty"`
	// Index is a log index at or after the one that appended the records of a push: a
	// replica that has applied it holds them all (see Request.MinIndex).
	Index uint64 `msgpack:"idx,omitempty"`
}

// Err returns nil if r reports success, else an *Error with r's code, message and leader.
func (r *Response) Err() error {
	if r.Code == CodeOK {
		return nil
	}
	return &Error{Code: r.Code, Message: r.Message, Leader: r.Leader}
}
