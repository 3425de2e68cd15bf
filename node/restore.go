package node

// Restoring a backup into the data directories of a new cluster, offline (like Recover).
// Every new node's directory gets the same state: the backup's, checked against its
// checksum and its state hashes, with the cluster's identity replaced — the new cluster
// id and the new members, whose incarnations are not yet known (each leader records its
// own, as on a new cluster) — as a Raft snapshot at the backup's index whose
// configuration names the new members as the voters. Started with the same flags as
// after a restart (no --bootstrap, no --join), the nodes elect a leader among themselves
// and go on from the backup's index.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/lockstepdb/lockstep/internal/backup"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sequencer"
)

// ErrBadRestore: a restore's arguments or target directory are unusable (nothing is
// written). A bad backup file is an error wrapping backup.ErrBadBackup instead.
var ErrBadRestore = errors.New("bad restore")

// RestoreResult describes a data directory Restore made.
type RestoreResult struct {
	// Backup is the backup's header.
	Backup backup.Header
	// ClusterID is the restored cluster's id.
	ClusterID string
	// Hashes are the partitions' state hashes at Backup.Index in the restored state (equal
	// to Backup.Hashes), Meta the hash of the rest, which differs from the source's by the
	// cluster's identity alone.
	Hashes []uint64
	Meta   uint64
}

// Restore makes cfg.DataDir the data directory of node cfg.ID of a new cluster whose
// voters are members, holding the state of the backup file at path. The new cluster's id
// is cfg.ClusterID, which must differ from the backup's; sameID keeps the backup's
// instead (cfg.ClusterID empty or equal to it). reg must hold the code the backup's
// cluster runs (a binary that cannot run it is refused, as at a node's start).
// cfg.DataDir must be empty or absent. Run it once per new node, with the same path,
// members and cluster id; then start each node as after a restart, with its id, data
// directory, cluster id and the addresses members gives it.
func Restore(cfg Config, reg *procedures.Registry, path string, members []Peer, sameID bool) (RestoreResult, error) {
	var res RestoreResult
	if err := checkRestoreTarget(cfg, members); err != nil {
		return res, err
	}
	f, err := os.Open(path)
	if err != nil {
		return res, err
	}
	defer f.Close()
	h, body, err := backup.NewReader(f)
	if err != nil {
		return res, fmt.Errorf("%s: %w", path, err)
	}
	res.Backup = h
	switch {
	case sameID && cfg.ClusterID != "" && cfg.ClusterID != h.ClusterID:
		return res, fmt.Errorf("%w: --same-id keeps the backup's cluster id %q, not %q", ErrBadRestore, h.ClusterID, cfg.ClusterID)
	case sameID:
		cfg.ClusterID = h.ClusterID
	case cfg.ClusterID == "":
		return res, fmt.Errorf("%w: the restored cluster needs a new cluster id (or --same-id to keep %q)", ErrBadRestore, h.ClusterID)
	case cfg.ClusterID == h.ClusterID:
		return res, fmt.Errorf("%w: cluster id %q is the backup's own: give a new one, or say --same-id", ErrBadRestore, h.ClusterID)
	}
	res.ClusterID = cfg.ClusterID
	cfg.CertsDir, cfg.Insecure = "", true // offline: no port opens
	cfg.Replica.Partitions = h.Partitions
	if err := cfg.Validate(); err != nil {
		return res, fmt.Errorf("%w: %w", ErrBadRestore, err)
	}
	cfg = cfg.withDefaults()
	fsm, err := replica.New(cfg.Replica, reg, cfg.Logger)
	if err != nil {
		return res, err
	}
	defer fsm.Close()
	if err := fsm.Restore(io.NopCloser(body)); err != nil {
		if derr := body.Drain(); errors.Is(derr, backup.ErrBadBackup) {
			return res, fmt.Errorf("%s: %w", path, derr) // the damage, not what it broke
		}
		return res, fmt.Errorf("%s: restore: %w", path, err)
	}
	if err := body.Drain(); err != nil {
		return res, fmt.Errorf("%s: %w", path, err)
	}
	if err := fsm.Incompatible(); err != nil {
		return res, fmt.Errorf("%s: this binary cannot run the backup's state: %w", path, err)
	}
	if got := fsm.Engine().Hashes(); !slices.Equal(got, h.Hashes) {
		return res, fmt.Errorf("%s: %w: restored partition hashes %x, the header records %x", path, backup.ErrChecksum, got, h.Hashes)
	}
	nodes := make([]batch.NodeInfo, len(members))
	servers := make([]sequencer.Server, len(members))
	for i, m := range members {
		nodes[i] = batch.NodeInfo{ID: m.ID, RaftAddr: m.RaftAddr, ClientAddr: m.ClientAddr}
		servers[i] = sequencer.Server{ID: m.ID, Addr: m.RaftAddr}
	}
	if err := fsm.Reidentify(cfg.ClusterID, nodes); err != nil {
		return res, err
	}
	snap, err := fsm.Snapshot()
	if err != nil {
		return res, err
	}
	// A voter of the snapshot's configuration from its first start: confirmed at once, as
	// a bootstrapping node is (identity.go, rule 4).
	id := DataIdentity{ClusterID: cfg.ClusterID, NodeID: cfg.ID, Incarnation: newIncarnation(), Confirmed: true}
	err = sequencer.WriteSnapshot(cfg.DataDir, h.Index, servers, snap)
	if err == nil {
		err = writeIdentity(cfg.DataDir, id)
	}
	if err != nil {
		emptyDir(cfg.DataDir) // it was empty: leave it so, for another try
		return res, err
	}
	st := fsm.StateHashes()
	res.Hashes, res.Meta = st.Hashes, st.Meta
	return res, nil
}

// emptyDir removes everything in dir.
func emptyDir(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// checkRestoreTarget refuses members that do not name cfg.ID once, or name an id twice,
// and a data directory that holds anything.
func checkRestoreTarget(cfg Config, members []Peer) error {
	if cfg.ID == "" || cfg.DataDir == "" {
		return fmt.Errorf("%w: the node's id and data directory are required", ErrBadRestore)
	}
	seen := map[string]bool{}
	for _, m := range members {
		if m.ID == "" || m.RaftAddr == "" || m.ClientAddr == "" {
			return fmt.Errorf("%w: member %q needs an id, a Raft address and a client address (ID=RAFT=CLIENT)", ErrBadRestore, m.ID)
		}
		if seen[m.ID] {
			return fmt.Errorf("%w: member %s named twice", ErrBadRestore, m.ID)
		}
		seen[m.ID] = true
	}
	if !seen[cfg.ID] {
		return fmt.Errorf("%w: the members must include this node, %s", ErrBadRestore, cfg.ID)
	}
	ents, err := os.ReadDir(cfg.DataDir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case len(ents) > 0:
		return fmt.Errorf("%w: %s is not empty: restore makes new data directories only", ErrBadRestore, cfg.DataDir)
	}
	return nil
}
