package batch

import "strconv"

// Result is the outcome of one item, as the FSM hands it back through raft's ApplyFuture
// to the node that proposed the entry.
type Result struct {
	// Value is the procedure's encoded result; owned by the receiver.
	Value []byte
	// Err is the item's typed error, identical on every replica; nil on success.
	Err error
	// Session is the new session id of a KindOpenSession item.
	Session uint64
}

// Results is what the FSM returns for one applied log entry: one Result per item, in order.
type Results struct {
	// Index is the log index of the entry.
	Index uint64
	// Items holds one result per item of the entry.
	Items []Result
}

// ClusterInfo is the payload of KindInitCluster: what every node of the cluster must agree
// on. It is the first entry a new cluster commits.
type ClusterInfo struct {
	// ClusterID names the cluster; clients and joining nodes must present it.
	ClusterID string `msgpack:"id"`
	// Partitions is the fixed partition count P.
	Partitions int `msgpack:"p"`
	// Procedures is the procedure registry's fingerprint.
	Procedures uint64 `msgpack:"procs"`
	// Settings are the initial values of the replicated cluster configuration (the
	// bootstrapping leader's configured values), by name; a setting not named takes its
	// compiled-in default. Nil in the first entry of a cluster created before the
	// configuration was replicated: its replicas keep each node's configured values.
	Settings []Setting `msgpack:"settings,omitempty"`
	// ClusterVersion is the cluster version the cluster starts at (the bootstrapping
	// binary's highest); 0 in the first entry of a cluster created before cluster versions,
	// which runs as version 1.
	ClusterVersion uint64 `msgpack:"cv,omitempty"`
	// Active are the procedure registrations the cluster starts with, by name, from
	// cluster version 2 on; Rest is the fingerprint of what is not versioned (replicated
	// tables, processors, changelogs: procedures.Registry.RestFingerprint).
	Active []Registration `msgpack:"active,omitempty"`
	Rest   uint64         `msgpack:"rest,omitempty"`
}

// Registration is one version of a procedure (procedures.Registration): its name, its
// version and its signature, which every node that runs it must carry alike.
type Registration struct {
	Name      string `msgpack:"n"`
	Version   uint32 `msgpack:"v"`
	Signature string `msgpack:"s"`
	// Processor marks a processor's registration (else a procedure's).
	Processor bool `msgpack:"p,omitempty"`
}

// Key returns "name@N", or "processor:name@N" for a processor: how a registration is
// named in commands, statuses and messages.
func (g Registration) Key() string {
	k := g.Name + "@" + strconv.FormatUint(uint64(g.Version), 10)
	if g.Processor {
		return "processor:" + k
	}
	return k
}

// MemberVersions is the range of cluster versions one member's binary supports, as the
// leader asked it before proposing an upgrade.
type MemberVersions struct {
	ID       string `msgpack:"id"`
	Min, Max uint64
}

// Setting is one named value of the replicated cluster configuration (replica.ClusterConfig
// lists the names); durations are in nanoseconds.
type Setting struct {
	Name  string `msgpack:"n"`
	Value int64  `msgpack:"v"`
}

// ConfigChange is the payload of KindClusterConfig: a read or a change of the replicated
// cluster configuration. The replicas check every value; a change with any bad one is
// refused whole, alike on every replica.
type ConfigChange struct {
	// Cmd is "get" (change nothing), "set", "upgrade" (move the cluster version to To),
	// "activate" (make the registrations Activate the running versions), "deploy-module"
	// or "remove-module" (cluster version 3 on), "remove-modules" (version 5 on).
	Cmd string `msgpack:"cmd"`
	// Set are the settings a "set" changes, each name at most once.
	Set []Setting `msgpack:"set,omitempty"`
	// To is the cluster version an "upgrade" moves to; Members are the supported ranges
	// the leader collected from every recorded node.
	To      uint64           `msgpack:"to,omitempty"`
	Members []MemberVersions `msgpack:"members,omitempty"`
	// Activate are the registrations an "activate" makes active, one per name.
	Activate []Registration `msgpack:"activate,omitempty"`
	// Module names the module a "deploy-module" deploys (or replaces) or a
	// "remove-module" removes; Kind is the language of Source ("starlark"; a later layer
	// adds kinds, the replicas look up a compiler per kind), Source its code, compiled
	// again by every replica when it applies the item.
	Module string `msgpack:"mod,omitempty"`
	Kind   string `msgpack:"kind,omitempty"`
	Source []byte `msgpack:"src,omitempty"`
	// Modules are the modules a "remove-modules" (cluster version 5 on) removes together,
	// all or none, at one index.
	Modules []string `msgpack:"mods,omitempty"`
}

// NodeInfo is the payload of KindNodeInfo: where to reach a node.
type NodeInfo struct {
	// ID is the node's Raft server id.
	ID string `msgpack:"id"`
	// RaftAddr is the node's Raft transport address.
	RaftAddr string `msgpack:"raft"`
	// ClientAddr is the address the node serves clients on.
	ClientAddr string `msgpack:"client"`
	// Incarnation identifies the node's data directory (a random id written when the
	// directory was created); empty when not known. A node that restarts under this ID
	// with another incarnation has lost its log.
	Incarnation string `msgpack:"inc,omitempty"`
	// ReadReplica marks a permanent non-voter that the leader never promotes.
	ReadReplica bool `msgpack:"rr,omitempty"`
}

// UserChange is the payload of KindUsers: one command on the users table. The replicas
// check it against the table and the procedure registry, so every replica accepts or
// refuses it alike.
type UserChange struct {
	// Cmd is "add", "remove", "grant", "revoke" or "list".
	Cmd string `msgpack:"cmd"`
	// Name is the user.
	Name string `msgpack:"name,omitempty"`
	// Role is the role of an added user: "admin", "writer" or "reader".
	Role string `msgpack:"role,omitempty"`
	// Procedures are granted or revoked; "*" means all.
	Procedures []string `msgpack:"procs,omitempty"`
}
