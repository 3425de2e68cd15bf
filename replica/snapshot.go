package replica

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/vmihailenco/msgpack/v5"
)

// Raft snapshots only bound the log's length (DESIGN.md section 6): a snapshot is the
// replicated state at one log index, from which the log after it replays to the same state.

// snapshotMeta is the replicated state besides the partitions.
type snapshotMeta struct {
	Applied  uint64             `msgpack:"applied"`
	LastTime int64              `msgpack:"time"`
	NextID   uint64             `msgpack:"next"`
	SweepAt  int64              `msgpack:"sweep"`
	Sessions []*session         `msgpack:"sessions"`
	Cluster  *batch.ClusterInfo `msgpack:"cluster"`
	Nodes    []batch.NodeInfo   `msgpack:"nodes"`
	Hashes   []HashRecord       `msgpack:"hashes"`
	// State is the state hash record at Applied: every partition's hash and the meta
	// hash. Restore recomputes both and refuses a snapshot whose state differs (a flipped
	// byte, a bug in the snapshot code). Absent (zero Index and no Hashes) in snapshots
	// written before it existed.
	State HashRecord `msgpack:"state"`
	Users []User     `msgpack:"users,omitempty"`
	// Config is the replicated cluster configuration; nil in snapshots of a cluster that
	// never recorded one, or written before it existed.
	Config *ClusterConfig `msgpack:"config,omitempty"`
	// Deployment is the cluster version and active registrations; nil in snapshots of a
	// cluster created before cluster versions (which runs as version 1).
	Deployment *Deployment `msgpack:"deploy,omitempty"`
}

type fsmSnapshot struct {
	meta []byte
	eng  *partition.Snapshot
}

// Snapshot implements raft.FSM: it copies the state now (cheaply: tables are
// copy-on-write) and writes it out later, concurrently with further applies.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	m := snapshotMeta{LastTime: f.lastTime, NextID: f.sess.nextID, SweepAt: f.sess.sweepAt}
	for _, id := range f.sess.ids() {
		m.Sessions = append(m.Sessions, f.sess.byID[id])
	}
	f.mu.Lock()
	m.Applied = f.applied
	m.Cluster = f.cluster
	for _, id := range sortedNodeIDs(f.nodes) {
		m.Nodes = append(m.Nodes, f.nodes[id])
	}
	m.Hashes = f.hashes
	f.mu.Unlock()
	m.State = HashRecord{Index: m.Applied, Hashes: f.eng.Hashes(), Meta: f.metaHash()}
	if us := f.users.Load(); us != nil {
		m.Users = us.List()[1:] // without RootUser, who is built in
	}
	if f.conf.Version != 0 {
		conf := f.conf
		m.Config = &conf
	}
	if f.dep.Version != 0 {
		d := f.dep.clone()
		m.Deployment = &d
	}
	meta, err := msgpack.Marshal(&m) // a deep copy: sessions change after this returns
	if err != nil {
		return nil, fmt.Errorf("snapshot meta: %w", err)
	}
	return &fsmSnapshot{meta: meta, eng: f.eng.Snapshot()}, nil
}

// Persist implements raft.FSMSnapshot.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	bw := bufio.NewWriter(sink)
	var lenBuf [binary.MaxVarintLen64]byte
	bw.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(s.meta)))])
	bw.Write(s.meta)
	if _, err := s.eng.WriteTo(bw); err != nil {
		sink.Cancel()
		return err
	}
	if err := bw.Flush(); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot.
func (s *fsmSnapshot) Release() {}

// maxMetaBytes bounds the metadata part of a snapshot read back.
const maxMetaBytes = 1 << 30

// Restore implements raft.FSM: it replaces the whole state with a snapshot's.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	br := bufio.NewReader(rc)
	n, err := binary.ReadUvarint(br)
	if err != nil || n > maxMetaBytes {
		return fmt.Errorf("%w: meta length", partition.ErrBadSnapshot)
	}
	meta := make([]byte, n)
	if _, err := io.ReadFull(br, meta); err != nil {
		return fmt.Errorf("%w: meta: %w", partition.ErrBadSnapshot, err)
	}
	var m snapshotMeta
	if err := msgpack.Unmarshal(meta, &m); err != nil {
		return fmt.Errorf("%w: meta: %w", partition.ErrBadSnapshot, err)
	}
	f.raiseVisible(m.Applied) // the restored state becomes visible as it is read in
	if err := f.eng.Restore(br); err != nil {
		return err
	}
	f.sess = newSessions(f.cfg)
	f.sess.nextID, f.sess.sweepAt = m.NextID, m.SweepAt
	for _, s := range m.Sessions {
		s.restored()
		f.sess.byID[s.ID] = s
	}
	f.sessionCount.Store(int64(len(m.Sessions)))
	f.lastTime = m.LastTime
	f.batchTime.Store(m.LastTime)
	f.users.Store(usersFromList(m.Users))
	if m.Config != nil {
		if err := m.Config.check(); err != nil {
			return fmt.Errorf("%w: %w", partition.ErrBadSnapshot, err)
		}
		f.useConfig(*m.Config)
	} else {
		f.useConfig(clusterConfigOf(f.cfg))
	}
	if m.Deployment != nil {
		f.useDeployment(m.Deployment.clone())
	} else {
		f.useDeployment(Deployment{})
	}
	f.mu.Lock()
	f.cluster = m.Cluster
	f.nodes = map[string]batch.NodeInfo{}
	for _, n := range m.Nodes {
		f.nodes[n.ID] = n
	}
	f.hashes = m.Hashes
	refused := f.checkCompatLocked()
	f.updateServingLocked()
	f.mu.Unlock()
	if refused {
		f.notifyIncompatible()
	}
	if err := f.verifySnapshotState(&m); err != nil {
		return err
	}
	f.advance(m.Applied)
	return nil
}

// verifySnapshotState checks the restored state against the hashes the snapshot carries
// for its index (the check after reading back, paired with the hashes taken when it was
// written). A mismatch means the snapshot, or the code that wrote or read it, is wrong:
// the state must not be served. The FSM's state is then unusable; raft.Restore's caller
// fails (on start: the node refuses to start).
func (f *FSM) verifySnapshotState(m *snapshotMeta) error {
	if m.State.Index == 0 && len(m.State.Hashes) == 0 {
		return nil // written before snapshots carried their hashes
	}
	got := HashRecord{Index: m.Applied, Hashes: f.eng.Hashes(), Meta: f.metaHash()}
	if m.State.Index != m.Applied || !slices.Equal(got.Hashes, m.State.Hashes) || got.Meta != m.State.Meta {
		return fmt.Errorf("%w: state at index %d restored with hashes %x meta %x; the snapshot recorded %x meta %x at index %d",
			partition.ErrBadSnapshot, m.Applied, got.Hashes, got.Meta, m.State.Hashes, m.State.Meta, m.State.Index)
	}
	return nil
}
