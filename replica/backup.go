package replica

// A backup is the state machine's snapshot at one log index (package backup wraps it in a
// file). Two things a backup needs of this package beyond Snapshot and Restore: reading a
// snapshot's description without restoring it (the backup's header names the index,
// cluster and hashes), and, for a restore into a new cluster, replacing the identity of
// the cluster the state belongs to — its id and its members — before the new cluster
// starts on it. Everything else (partitions, streams, sessions, groups, users, the
// configuration, the deployed code) passes unchanged.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/vmihailenco/msgpack/v5"
)

// SnapshotInfo describes a state machine snapshot, from its metadata alone.
type SnapshotInfo struct {
	// Applied is the log index the snapshot stands for.
	Applied uint64
	// ClusterID and Partitions are the cluster's identity; empty and 0 if the snapshot
	// has none recorded (a cluster whose first entry was not yet applied).
	ClusterID  string
	Partitions int
	// ClusterVersion is the cluster version the state runs (Deployment.Effective).
	ClusterVersion uint64
	// State is the hash record at Applied (zero in snapshots from before they carried it).
	State HashRecord
}

// ReadSnapshotInfo reads the head of a snapshot (as Persist writes it) from r and
// describes it. It reads only the metadata part; errors wrap partition.ErrBadSnapshot.
func ReadSnapshotInfo(r io.Reader) (SnapshotInfo, error) {
	br := bufio.NewReader(r)
	n, err := binary.ReadUvarint(br)
	if err != nil || n > maxMetaBytes {
		return SnapshotInfo{}, fmt.Errorf("%w: meta length", partition.ErrBadSnapshot)
	}
	meta := make([]byte, n)
	if _, err := io.ReadFull(br, meta); err != nil {
		return SnapshotInfo{}, fmt.Errorf("%w: meta: %w", partition.ErrBadSnapshot, err)
	}
	var m snapshotMeta
	if err := msgpack.Unmarshal(meta, &m); err != nil {
		return SnapshotInfo{}, fmt.Errorf("%w: meta: %w", partition.ErrBadSnapshot, err)
	}
	info := SnapshotInfo{Applied: m.Applied, State: m.State, ClusterVersion: 1}
	if m.Cluster != nil {
		info.ClusterID, info.Partitions = m.Cluster.ClusterID, m.Cluster.Partitions
	}
	if m.Deployment != nil {
		info.ClusterVersion = m.Deployment.Effective()
	}
	return info, nil
}

// Reidentify makes the restored state belong to another cluster: its cluster id becomes
// clusterID (unless the state records no cluster yet) and its members exactly nodes.
// Only for a state machine that no Raft runs on: a restore into new data directories
// calls it between Restore and Snapshot, so that every new node starts from the same
// state. It changes the meta hash (the identity is replicated state), nothing else.
func (f *FSM) Reidentify(clusterID string, nodes []batch.NodeInfo) error {
	if clusterID == "" {
		return fmt.Errorf("replica: reidentify: empty cluster id")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cluster != nil {
		c := *f.cluster
		c.Settings, c.Active = slices.Clone(c.Settings), slices.Clone(c.Active)
		c.ClusterID = clusterID
		f.cluster = &c
	}
	f.nodes = make(map[string]batch.NodeInfo, len(nodes))
	for _, n := range nodes {
		if n.ID == "" {
			return fmt.Errorf("replica: reidentify: a node without an id")
		}
		f.nodes[n.ID] = n
	}
	return nil
}

// StateHashes returns the hash record of the state now: the applied index, every
// partition's hash and the meta hash. Not for a state machine Raft is applying to (the
// meta hash reads the sessions unlocked): a restore calls it offline.
func (f *FSM) StateHashes() HashRecord {
	return HashRecord{Index: f.Applied(), Hashes: f.eng.Hashes(), Meta: f.metaHash()}
}
