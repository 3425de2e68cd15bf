package sequencer

import (
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"time"

	"github.com/hashicorp/raft"
	walfs "github.com/hashicorp/raft-wal/types"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/netaddr"
)

// Defaults for the zero fields of a Config.
const (
	DefaultMaxBatchInputs     = 1024
	DefaultMaxBatchBytes      = 1 << 20
	DefaultMaxInflightBatches = 1
	DefaultMaxQueuedInputs    = 1 << 16
	DefaultApplyTimeout       = 10 * time.Second
	DefaultHashCheckInterval  = time.Second
	DefaultSnapshotInterval   = 10 * time.Second
	DefaultTrailingLogs       = 10240
	DefaultSnapshotBytes      = 64 << 20
	DefaultTrailingBytes      = 64 << 20
	// DefaultWALSegmentBytes is the size of one raft-wal segment file (raft-wal's own
	// default). Segments are preallocated, and removed only whole once a snapshot has
	// compacted every entry in them.
	DefaultWALSegmentBytes = 64 << 20
	// The Raft timeouts are tuned for a loopback or LAN cluster: a follower that has heard
	// nothing for HeartbeatTimeout (randomised up to twice that) starts a pre-vote, and a
	// leader that has not reached a quorum for LeaderLeaseTimeout steps down. Raise all
	// three together across a WAN; hashicorp/raft's own defaults are 1s, 1s, 500ms.
	DefaultHeartbeatTimeout   = 500 * time.Millisecond
	DefaultElectionTimeout    = 500 * time.Millisecond
	DefaultLeaderLeaseTimeout = 250 * time.Millisecond
	// DefaultCommitTimeout is Raft's CommitTimeout: how long the leader may go without
	// sending followers an AppendEntries RPC, which tells them the commit index. Followers
	// apply an entry only once they learn it is committed, so this bounds how far a
	// follower's applied state (what its stream subscribers see) trails the leader's when
	// no new entry carries the news; an idle leader sends an empty RPC this often (randomised
	// up to twice that), per follower. It is hashicorp/raft's own default: at 5ms, a
	// follower whose answers stall for about a second (a loaded machine) lets 256 such RPCs
	// pile up in a pipeline, which deadlocks raft v1.7.3's pipeline replication (its sender
	// blocks on a full in-progress queue while the decoder blocks on a full done queue whose
	// reader has quit) and then the leader's shutdown; seen as a 15-minute hang of Close in
	// TestDivergentLeaderHandsOff.
	DefaultCommitTimeout = 50 * time.Millisecond
)

// Limits that Validate enforces, so a typo cannot make the sequencer unbounded.
const (
	// MinBatchBytes is the smallest MaxBatchBytes.
	MinBatchBytes = 4 << 10
	// MaxBatchBytesLimit is the largest MaxBatchBytes: one log entry is held in memory by
	// the leader, written to every log and sent in one AppendEntries RPC.
	MaxBatchBytesLimit = 64 << 20
	// MaxInflightLimit is the largest MaxInflightBatches.
	MaxInflightLimit = 64
	// MaxQueueLimit is the largest MaxQueuedInputs.
	MaxQueueLimit = 1 << 22
	// MinWALSegmentBytes and MaxWALSegmentBytes bound WALSegmentBytes.
	MinWALSegmentBytes = 4 << 10
	MaxWALSegmentBytes = 1 << 30
	// MaxBatchDelayLimit is the longest MaxBatchDelay.
	MaxBatchDelayLimit = time.Second
)

// Config is the configuration of one Sequencer. Zero fields get the documented defaults;
// negative values are errors unless a field says otherwise.
type Config struct {
	// NodeID is this node's Raft server id, unique in the cluster for all time. Required.
	NodeID string
	// RaftAddr is the bind address of the Raft TCP transport, e.g. "127.0.0.1:7000".
	// Port 0 lets the OS choose; Sequencer.Addr reports the real address. The host must
	// be one other nodes can dial (not 0.0.0.0). Required unless Transport is set; then
	// it must be empty or equal to Transport.LocalAddr().
	RaftAddr string
	// RaftAdvertise is the address the default transport tells its peers to dial (the
	// Raft configuration holds it) when it is not the bind address RaftAddr: a DNS name,
	// or the address in front of a container or a NAT; RaftAddr may then bind 0.0.0.0.
	// HOST alone takes the bound port. Default "": RaftAddr, with its port as bound. Not
	// with Transport or StreamLayer, whose own address is the advertised one.
	RaftAdvertise string
	// DataDir holds the Raft log and stable store (wal/ for LogStoreWAL, raft.db for
	// LogStoreBolt; both fsync every write) and snapshots/ (raft.FileSnapshotStore keeping the last 2). Created if
	// missing. Required unless LogStore, StableStore and SnapshotStore are all set.
	DataDir string

	// Transport, LogStore, StableStore and SnapshotStore replace the defaults the
	// Sequencer otherwise builds: a TCP transport on RaftAddr, and raft-boltdb's raft.db
	// (as both log and stable store) and a FileSnapshotStore in DataDir. Each is optional
	// and independent of the others; tests inject raft.NewInmemTransport and the in-memory
	// stores to cut links in process, and another log store (raft-wal) fits here.
	//
	// Ownership: the Sequencer closes only what it built. An injected one is its
	// owner's: the Sequencer uses it from Open until Close returns, never closes it (nor
	// lets Raft's Shutdown close the transport, which hashicorp/raft would otherwise do),
	// and the owner closes it (if it has a Close) after Close. An injected log store must
	// make an entry durable before StoreLogs returns, as raft-boltdb does (RAFT-NOTES:
	// never NoSync); the Sequencer cannot check this.
	Transport raft.Transport
	// StreamLayer, if set, carries the default transport instead of plain TCP on RaftAddr
	// (the node's mutual-TLS layer): the Sequencer builds its network transport over it
	// with the same pool, timeout and logging, and Close closes it. If Open fails, the
	// caller closes it (a StreamLayer's Close should be idempotent). RaftAddr must then
	// be empty or equal to its Addr().
	// Not with Transport.
	StreamLayer raft.StreamLayer
	LogStore    raft.LogStore
	// LogStoreKind is the log and stable store Open builds in DataDir when LogStore or
	// StableStore is not injected: LogStoreBolt, LogStoreWAL, or empty (the default): the
	// kind DataDir already holds, else DefaultLogStore. Open refuses a DataDir that holds
	// the other kind's files (ErrLogStoreMismatch).
	LogStoreKind string
	// WALSegmentBytes is the size of one raft-wal segment file, in bytes (LogStoreWAL
	// only). Default DefaultWALSegmentBytes; between MinWALSegmentBytes and
	// MaxWALSegmentBytes. A log entry larger than a segment still fits: the segment grows
	// and is sealed. raft-wal frees log space a segment at a time, so a compacted log
	// keeps serving entries until their whole segment is behind the snapshot: a test that
	// needs a lagging node to receive a snapshot uses small segments.
	WALSegmentBytes int
	// WALFiles is how raft-wal's segment files are made (LogStoreWAL only):
	// WALFilesPreallocated (raft-wal's own: fallocated, each commit an fsync) or
	// WALFilesZeroed (written with zeros when made, a spare kept zeroed in the background,
	// each commit an fdatasync). Empty: DefaultWALFiles. Ignored when WALFileSystem is
	// set. A data dir written with one kind opens with the other.
	WALFiles string
	// WALFileSystem, if set, is the file system raft-wal keeps its segment files on
	// (LogStoreWAL only; its meta.db stays a bbolt file). A fault-injection hook: the
	// harness's power-loss model (internal/crashstore.FS). Nil: the operating system's.
	WALFileSystem walfs.VFS
	StableStore   raft.StableStore
	SnapshotStore raft.SnapshotStore

	// MaxBatchInputs is the most inputs in one log entry, not counting the hash-check item
	// the leader may add. Default 1024; at most batch.MaxItems-1.
	MaxBatchInputs int
	// MaxBatchBytes bounds the encoded size of one log entry, in bytes. Default 1 MiB;
	// between MinBatchBytes and MaxBatchBytesLimit. An item that cannot fit alone is
	// refused by Submit with ErrTooLarge.
	MaxBatchBytes int
	// MaxBatchDelay is how long the batcher may wait for more inputs once it has some and
	// the batch is not full. Default 0: take what is queued and go; batches still grow
	// under load while MaxInflightBatches are outstanding. At most MaxBatchDelayLimit.
	MaxBatchDelay time.Duration
	// MaxInflightBatches is the most raft.Apply calls outstanding at once. While they are
	// all outstanding, new inputs queue up and form the next, bigger batch: adaptive group
	// commit. Default 1: measured on loopback with fsync, one batch in flight gives bigger batches and
	// more throughput than 4 (benchmarks/RESULTS.md). At most MaxInflightLimit.
	MaxInflightBatches int
	// MaxQueuedInputs bounds the inputs waiting for a batch; beyond it Submit returns
	// ErrOverloaded. Default 65536; at least MaxBatchInputs, at most MaxQueueLimit.
	MaxQueuedInputs int
	// ApplyTimeout is the enqueue timeout passed to raft.Apply, and the default timeout of
	// operations whose context has no deadline. Default 10s.
	ApplyTimeout time.Duration
	// HashCheckInterval is how often, at most, the leader adds a batch.KindHashCheck item
	// to a batch (measured in batch time). Default 1s; negative disables hash checks.
	HashCheckInterval time.Duration

	// SnapshotThreshold is how many log entries since the last snapshot make Raft take a
	// snapshot and compact its log, at least: the node raises it to the last snapshot's
	// size in entries (compaction.go). 0 turns automatic snapshots off (Snapshot still
	// works).
	SnapshotThreshold uint64
	// SnapshotInterval is how often Raft checks SnapshotThreshold (randomised up to twice
	// that). Default 10s when snapshots are on; ignored when they are off.
	SnapshotInterval time.Duration
	// TrailingLogs is how many entries a snapshot leaves in the log, so a follower that is
	// a little behind catches up from the log rather than by a snapshot. Default 10240.
	TrailingLogs uint64
	// SnapshotBytes is how many bytes of entries applied since the last snapshot make the
	// node take a snapshot too, whatever their count, or the last snapshot's size if that
	// is larger (compaction.go). Default 64 MiB;
	// negative: by entry count only. Ignored while automatic snapshots are off.
	SnapshotBytes int64
	// TrailingBytes bounds the bytes a snapshot by bytes leaves in the log: the entries
	// kept are TrailingLogs or TrailingBytes' worth at the recent mean entry size, the
	// fewer. Default 64 MiB; negative: TrailingLogs only.
	TrailingBytes int64
	// NoSnapshotFloor lets both triggers fire before the log since the last snapshot is as
	// large as that snapshot (compaction.go): for tests that want a snapshot every few KiB
	// whatever the state's size. Production nodes leave it off.
	NoSnapshotFloor bool

	// HeartbeatTimeout, ElectionTimeout and LeaderLeaseTimeout are Raft's timeouts; see
	// DefaultHeartbeatTimeout. ElectionTimeout >= HeartbeatTimeout >= LeaderLeaseTimeout.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// CommitTimeout is Raft's CommitTimeout; see DefaultCommitTimeout.
	CommitTimeout time.Duration

	// HoldVotes opens the node with its vote gate held: it refuses every vote request
	// until AllowVotes is called, while it still receives the log. For a node that cannot
	// yet vouch for its log (a new or wiped data directory); see votegate.go.
	HoldVotes bool
	// LegacyLog accepts log entries stored without a checksum, as versions before
	// checksums wrote them, in the log store Open builds (only raft.db can hold such
	// entries: raft-wal came later); new entries get one either way.
	// Leave it off for directories created since: an entry without a checksum is then
	// ErrLogCorrupt.
	LegacyLog bool

	// Logger receives the sequencer's and Raft's logs. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock that stamps batch times. Default time.Now; tests may inject one.
	Now func() time.Time
	// Dial, when set, opens the built TCP transport's outbound connections to a peer's
	// Raft address instead of a plain net.DialTimeout: the fault-injection harness
	// (jepsen/) routes each directed link through a proxy it controls. Ignored with an
	// injected Transport or StreamLayer (a StreamLayer dials for itself; the node's TLS
	// layer takes this function). Default nil (dial the address).
	Dial func(addr string, timeout time.Duration) (net.Conn, error)
}

// DefaultConfig returns a Config with every default filled in; the caller sets NodeID,
// RaftAddr and DataDir.
func DefaultConfig() Config {
	return Config{}.withDefaults()
}

// withDefaults returns c with its zero fields replaced by their defaults.
func (c Config) withDefaults() Config {
	setInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	setInt(&c.MaxBatchInputs, DefaultMaxBatchInputs)
	setInt(&c.MaxBatchBytes, DefaultMaxBatchBytes)
	setInt(&c.MaxInflightBatches, DefaultMaxInflightBatches)
	setInt(&c.MaxQueuedInputs, DefaultMaxQueuedInputs)
	setInt(&c.WALSegmentBytes, DefaultWALSegmentBytes)
	if c.WALFiles == "" {
		c.WALFiles = DefaultWALFiles
	}
	setDur(&c.ApplyTimeout, DefaultApplyTimeout)
	setDur(&c.HashCheckInterval, DefaultHashCheckInterval)
	setDur(&c.SnapshotInterval, DefaultSnapshotInterval)
	setDur(&c.HeartbeatTimeout, DefaultHeartbeatTimeout)
	setDur(&c.ElectionTimeout, DefaultElectionTimeout)
	setDur(&c.LeaderLeaseTimeout, DefaultLeaderLeaseTimeout)
	setDur(&c.CommitTimeout, DefaultCommitTimeout)
	if c.SnapshotBytes == 0 {
		c.SnapshotBytes = DefaultSnapshotBytes
	}
	if c.TrailingBytes == 0 {
		c.TrailingBytes = DefaultTrailingBytes
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = DefaultTrailingLogs
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports whether c, with defaults applied, is usable. Every error wraps
// ErrBadConfig.
func (c Config) Validate() error {
	c = c.withDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case c.NodeID == "":
		return bad("NodeID is required")
	case c.Transport != nil && c.StreamLayer != nil:
		return bad("Transport and StreamLayer are both set; give one")
	case c.StreamLayer != nil && c.RaftAddr != "" && c.RaftAddr != c.StreamLayer.Addr().String():
		return bad("RaftAddr %q differs from the StreamLayer's address %q", c.RaftAddr, c.StreamLayer.Addr())
	case c.StreamLayer != nil && !advertisable(c.StreamLayer.Addr().String()):
		return bad("the StreamLayer's address %q must be host:port with a host other nodes can dial", c.StreamLayer.Addr())
	case c.RaftAdvertise != "" && (c.Transport != nil || c.StreamLayer != nil):
		return bad("RaftAdvertise is for the default transport; an injected Transport or StreamLayer advertises its own address")
	case c.RaftAdvertise != "":
		if err := netaddr.Check("raft", c.RaftAdvertise, c.RaftAddr); err != nil {
			return fmt.Errorf("%w: %w", ErrBadConfig, err)
		}
	case c.Transport == nil && c.StreamLayer == nil && !advertisable(c.RaftAddr):
		return bad("RaftAddr %q must be host:port with a host other nodes can dial (or give RaftAdvertise)", c.RaftAddr)
	case c.Transport != nil && c.Transport.LocalAddr() == "":
		return bad("Transport has an empty LocalAddr")
	case c.Transport != nil && c.RaftAddr != "" && c.RaftAddr != string(c.Transport.LocalAddr()):
		return bad("RaftAddr %q differs from the injected Transport's address %q; leave RaftAddr empty or make them equal",
			c.RaftAddr, c.Transport.LocalAddr())
	case c.DataDir == "" && c.needsDataDir():
		return bad("DataDir is required unless LogStore, StableStore and SnapshotStore are all set")
	case !validLogStore(c.LogStoreKind):
		return bad("LogStoreKind %q: want %q or %q", c.LogStoreKind, LogStoreBolt, LogStoreWAL)
	case !validWALFiles(c.WALFiles):
		return bad("WALFiles %q: want %q or %q", c.WALFiles, WALFilesPreallocated, WALFilesZeroed)
	case c.WALSegmentBytes < MinWALSegmentBytes || c.WALSegmentBytes > MaxWALSegmentBytes:
		return bad("WALSegmentBytes %d not in [%d, %d]", c.WALSegmentBytes, MinWALSegmentBytes, MaxWALSegmentBytes)
	case c.MaxBatchInputs < 1 || c.MaxBatchInputs > batch.MaxItems-1:
		return bad("MaxBatchInputs %d not in [1, %d]", c.MaxBatchInputs, batch.MaxItems-1)
	case c.MaxBatchBytes < MinBatchBytes || c.MaxBatchBytes > MaxBatchBytesLimit:
		return bad("MaxBatchBytes %d not in [%d, %d]", c.MaxBatchBytes, MinBatchBytes, MaxBatchBytesLimit)
	case c.MaxBatchDelay < 0 || c.MaxBatchDelay > MaxBatchDelayLimit:
		return bad("MaxBatchDelay %v not in [0, %v]", c.MaxBatchDelay, MaxBatchDelayLimit)
	case c.MaxInflightBatches < 1 || c.MaxInflightBatches > MaxInflightLimit:
		return bad("MaxInflightBatches %d not in [1, %d]", c.MaxInflightBatches, MaxInflightLimit)
	case c.MaxQueuedInputs < c.MaxBatchInputs || c.MaxQueuedInputs > MaxQueueLimit:
		return bad("MaxQueuedInputs %d not in [MaxBatchInputs=%d, %d]", c.MaxQueuedInputs, c.MaxBatchInputs, MaxQueueLimit)
	case c.ApplyTimeout < 0:
		return bad("ApplyTimeout %v is negative", c.ApplyTimeout)
	case c.MaxBatchDelay >= c.ApplyTimeout:
		return bad("MaxBatchDelay %v must be shorter than ApplyTimeout %v", c.MaxBatchDelay, c.ApplyTimeout)
	case c.SnapshotInterval < 0:
		return bad("SnapshotInterval %v is negative", c.SnapshotInterval)
	case c.HeartbeatTimeout < 0 || c.ElectionTimeout < 0 || c.LeaderLeaseTimeout < 0 || c.CommitTimeout < 0:
		return bad("negative Raft timeout")
	}
	if err := raft.ValidateConfig(c.raftConfig(nil)); err != nil {
		return bad("raft: %v", err)
	}
	return nil
}

// needsDataDir reports whether Open must build a default store in DataDir.
func (c Config) needsDataDir() bool {
	return c.LogStore == nil || c.StableStore == nil || c.SnapshotStore == nil
}

// advertisable reports whether addr is host:port with a host that is not empty or
// unspecified (0.0.0.0, ::): the Raft transport advertises its bind address to peers.
func advertisable(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err != nil || !ip.IsUnspecified() // a name, or a specific address
}

// snapshotsOffInterval is the SnapshotInterval given to Raft when snapshots are off: Raft
// still runs its snapshot timer, so it gets one that never fires in practice (raft
// randomises it up to twice this, which still fits in a Duration).
const snapshotsOffInterval = time.Duration(math.MaxInt64 / 4)

// raftConfig builds the hashicorp/raft configuration of c (defaults already applied).
func (c Config) raftConfig(logger *hclogAdapter) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.NodeID)
	rc.HeartbeatTimeout = c.HeartbeatTimeout
	rc.ElectionTimeout = c.ElectionTimeout
	rc.LeaderLeaseTimeout = c.LeaderLeaseTimeout
	rc.CommitTimeout = c.CommitTimeout
	rc.TrailingLogs = c.TrailingLogs
	if c.SnapshotThreshold == 0 {
		rc.SnapshotThreshold = math.MaxUint64
		rc.SnapshotInterval = snapshotsOffInterval
	} else {
		rc.SnapshotThreshold = c.SnapshotThreshold
		rc.SnapshotInterval = c.SnapshotInterval
	}
	// Raft's lifecycle belongs to Close alone: a node removed from the configuration stays
	// up as a non-voter until its owner closes it. (With ShutdownOnRemove, Raft would stop
	// itself and could strand futures the sequencer is still waiting on; see Close.)
	rc.ShutdownOnRemove = false
	// Batching happens in the sequencer; BatchApplyCh would break Apply's timeout
	// contract (RAFT-NOTES, hashicorp/vault issue 11907).
	rc.BatchApplyCh = false
	// Rebuild from snapshot plus log on start (RAFT-NOTES, hashicorp/raft PR 340).
	rc.NoSnapshotRestoreOnStart = false
	// Pre-vote stops a rejoining node from inflating the term (hashicorp/raft PR 530).
	rc.PreVoteDisabled = false
	if logger != nil {
		rc.Logger = logger
	}
	return rc
}
