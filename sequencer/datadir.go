package sequencer

// Checking a data directory before Raft starts on it, and recovering a cluster that lost
// its quorum, offline, on the node's own stores.

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/raft"
)

// ErrSnapshotCorrupt is returned when a stored snapshot fails its checks: unreadable
// metadata, a state file whose CRC-64 differs from the one recorded when it was written
// (raft.FileSnapshotStore verifies it on every Open), or metadata that differs from the
// copy at the head of the state file, or from the state file's size (snapcheck.go).
var ErrSnapshotCorrupt = errors.New("sequencer: snapshot corrupt")

// DataDirState is what CheckDataDir found in a data directory.
type DataDirState struct {
	// HasState is true when the directory holds Raft state: a term, log entries or a
	// snapshot (raft.HasExistingState).
	HasState bool
	// FirstIndex and LastIndex bound the log entries stored (0, 0: none).
	FirstIndex, LastIndex uint64
	// Snapshots is the number of snapshots kept; SnapshotIndex the newest one's index.
	Snapshots     int
	SnapshotIndex uint64
}

// CheckDataDir reads every log entry of dir's log store (raft.db or wal/) and verifies its
// checksum, and
// verifies every snapshot's metadata and CRC, without starting Raft (Open makes the same
// checks before Raft starts on the stores it builds). legacy accepts log entries written
// without a checksum (Config.LegacyLog). A missing directory, or one with neither raft.db
// nor wal/, is an empty state, not an error. Errors wrap ErrLogCorrupt or
// ErrSnapshotCorrupt for damage, ErrLogStoreMismatch for a dir holding both stores, or are
// the store's own (the store locked by a running node, unreadable).
func CheckDataDir(dir string, legacy bool) (DataDirState, error) { return inspect(dir, legacy, true) }

// InspectDataDir is CheckDataDir without reading every entry and snapshot: it reports
// whether dir holds Raft state, and the log's bounds, at the cost of opening the log store.
func InspectDataDir(dir string) (DataDirState, error) { return inspect(dir, true, false) }

func inspect(dir string, legacy, full bool) (DataDirState, error) {
	var st DataDirState
	snaps, err := openSnapshotStore(dir, newHclogAdapter(discardLogger(), "snapshots"))
	if err != nil {
		return st, err
	}
	list, _ := snaps.List()
	st.Snapshots = len(list)
	if len(list) > 0 {
		st.SnapshotIndex = list[0].Index
	}
	if full {
		if st.Snapshots, err = checkSnapshots(dir, snaps); err != nil {
			return st, err
		}
	}
	st.HasState = st.Snapshots > 0
	kind, found, err := logStoreInDir(dir)
	if err != nil {
		return st, err
	}
	if !found || (kind == LogStoreWAL && !walHoldsLog(dir)) {
		return st, nil // nothing to open, and opening raft-wal would create its files
	}
	store, closeStore, err := openLogStore(kind, dir, walOptions{segmentBytes: DefaultWALSegmentBytes}, newHclogAdapter(discardLogger(), "raft"))
	if err != nil {
		return st, err
	}
	defer closeStore()
	logs := &checkedLogs{LogStore: store, legacy: legacy}
	if full {
		st.FirstIndex, st.LastIndex, err = verifyLog(logs)
	} else {
		st.FirstIndex, err = logs.FirstIndex()
		if err == nil {
			st.LastIndex, err = logs.LastIndex()
		}
	}
	if err != nil {
		return st, err
	}
	if st.HasState, err = raft.HasExistingState(logs, store, snaps); err != nil {
		return st, fmt.Errorf("sequencer: %w", err)
	}
	return st, nil
}

// checkSnapshots opens every snapshot in dir/snapshots through snaps, the store on dir
// (which checks the state file's CRC as it opens it), and returns how many there are. A snapshot directory the store
// cannot list (its metadata unreadable) is corrupt too: the store would silently skip it
// and start from an older snapshot, whose log has been compacted away.
func checkSnapshots(dir string, snaps *checkedSnapshots) (int, error) {
	ents, err := os.ReadDir(filepath.Join(dir, "snapshots"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("sequencer: snapshots: %w", err)
	}
	list, err := snaps.List()
	if err != nil {
		return 0, fmt.Errorf("sequencer: list snapshots: %w", err)
	}
	listed := map[string]bool{}
	for _, m := range list {
		listed[m.ID] = true
	}
	n := 0
	for _, e := range ents {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		n++
		if !listed[e.Name()] {
			return n, fmt.Errorf("%w: snapshot %s: metadata unreadable", ErrSnapshotCorrupt, e.Name())
		}
		_, rc, err := snaps.Open(e.Name())
		switch {
		case errors.Is(err, ErrSnapshotCorrupt): // metadata and its copy differ: it says which
			return n, err
		case err != nil:
			return n, fmt.Errorf("%w: snapshot %s: %w", ErrSnapshotCorrupt, e.Name(), err)
		}
		rc.Close()
	}
	return n, nil
}

// Recover rewrites the Raft configuration of the node whose stores cfg names (its
// DataDir, or the injected stores) to members, for a cluster that has lost its quorum
// for good: hashicorp/raft's RecoverCluster restores the newest snapshot into fsm, applies
// every log entry after it (including entries not known to be committed: recovery makes
// them committed), writes a snapshot with the new configuration and compacts the log.
// Run it offline (the node stopped) on each survivor with the same members, then start
// the survivors. fsm must be a fresh state machine of the node's kind; Recover does not
// close it. The node's identity is unchanged.
func Recover(cfg Config, fsm raft.FSM, members []Server) error {
	if len(members) == 0 {
		return fmt.Errorf("sequencer: recover: %w: no members", ErrBadConfig)
	}
	if cfg.RaftAddr == "" {
		cfg.RaftAddr = members[0].Addr // any advertisable address: nothing listens
	}
	cfg.Transport = nil
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	conf := raft.Configuration{}
	self := false
	for _, m := range members {
		if m.ID == "" || m.Addr == "" {
			return fmt.Errorf("sequencer: recover: %w: member %+v needs an ID and an Addr", ErrBadConfig, m)
		}
		self = self || m.ID == cfg.NodeID
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(m.ID), Address: raft.ServerAddress(m.Addr)})
	}
	if !self {
		return fmt.Errorf("sequencer: recover: %w: the members must include this node, %s", ErrBadConfig, cfg.NodeID)
	}
	hlog := newHclogAdapter(cfg.Logger.With("node", cfg.NodeID), "raft")
	_, trans := raft.NewInmemTransport(raft.ServerAddress(cfg.RaftAddr))
	cfg.Transport = trans
	if _, found, err := logStoreInDir(cfg.DataDir); err != nil {
		return fmt.Errorf("sequencer: recover: %w", err)
	} else if !found {
		return fmt.Errorf("sequencer: recover: %w: %s holds no raft.db and no wal/: no Raft log to recover", ErrBadConfig, cfg.DataDir)
	}
	parts, err := openParts(cfg, hlog)
	if errors.Is(err, ErrDataDirLocked) {
		return fmt.Errorf("sequencer: recover: %s is locked: is the node still running? Recovery runs on a stopped node: %w", cfg.DataDir, err)
	} else if err != nil {
		return err
	}
	err = raft.RecoverCluster(cfg.raftConfig(hlog), fsm, parts.logs, parts.stable, parts.snaps, parts.trans, conf)
	return errors.Join(err, parts.close())
}

// discardLogger is a logger that drops everything.
func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// DiscardState removes the Raft state of the stopped node whose data directory is dir:
// its log and stable store (raft.db) and its snapshots. Other files (the node's identity)
// stay. The node then starts as a new, empty server: the leader sends it a snapshot and
// the log after it. Only for a node that is no longer a voter (a voter must never forget
// its log; see node/identity.go).
func DiscardState(dir string) error {
	for _, name := range []string{"raft.db", "snapshots"} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("sequencer: discard state: %w", err)
		}
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
