package sequencer

// Backups and restores. A backup is a Raft snapshot taken for the purpose (raft.Snapshot:
// the state machine copies its state between two applies, cheaply, and writes it out
// while applies go on), read from the snapshot store as a stream. A restore writes the
// other way: a snapshot made offline into a new data directory, whose Raft configuration
// names the new cluster's voters, so that Raft starts from it as from any snapshot.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"
)

// Snapshot is a stored snapshot, taken by Backup.
type Snapshot struct {
	// Index and Term are the log position the state stands for.
	Index, Term uint64
	// Size is the length of the state machine's bytes.
	Size int64
	// Open opens a reader of the state machine's bytes. Every reader opened while the
	// snapshot is still stored reads it to its end, even if the store removes it later.
	Open func() (io.ReadCloser, error)
}

// Backup snapshots the state machine now (at its applied index, which is then the
// snapshot's index) and returns the snapshot to read. Writes go on meanwhile. With
// nothing applied since the last snapshot, that one is the backup: it stands for the
// applied index already. Like every snapshot, it lets Raft compact its log.
func (s *Sequencer) Backup(ctx context.Context) (Snapshot, error) {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	var fut raft.SnapshotFuture
	_, err := s.await(ctx, "backup", func(time.Duration) raft.Future { fut = s.raft.Snapshot(); return fut })
	var id string
	switch {
	case err == nil:
		meta, rc, err := fut.Open()
		if err != nil {
			return Snapshot{}, fmt.Errorf("sequencer: backup: open snapshot: %w", err)
		}
		rc.Close()
		id = meta.ID
	case errors.Is(err, raft.ErrNothingNewToSnapshot):
		list, lerr := s.parts.snaps.List()
		if lerr != nil || len(list) == 0 {
			return Snapshot{}, fmt.Errorf("sequencer: backup: no snapshot stored: %w", errors.Join(err, lerr))
		}
		id = list[0].ID
	default:
		return Snapshot{}, err
	}
	meta, rc, err := s.parts.snaps.Open(id)
	if err != nil {
		return Snapshot{}, fmt.Errorf("sequencer: backup: open snapshot %s: %w", id, err)
	}
	rc.Close()
	snaps := s.parts.snaps
	return Snapshot{Index: meta.Index, Term: meta.Term, Size: meta.Size, Open: func() (io.ReadCloser, error) {
		m, rc, err := snaps.Open(id)
		if err == nil && (m.Index != meta.Index || m.Size != meta.Size) {
			rc.Close()
			err = fmt.Errorf("%w: snapshot %s changed while it was read", ErrSnapshotCorrupt, id)
		}
		if err != nil {
			return nil, fmt.Errorf("sequencer: backup: open snapshot %s: %w", id, err)
		}
		return rc, nil
	}}, nil
}

// RestoreTerm is the Raft term of the snapshot WriteSnapshot writes: a restored cluster's
// log starts over at term 1, whatever the source's term was, so that the terms in the log
// never decrease.
const RestoreTerm = 1

// WriteSnapshot writes snap, the state machine's state at log index index, into the
// snapshot store of the new data directory dir, with members as the Raft voters. Raft
// started on dir then restores the state machine from it and replays nothing before it.
// dir must hold no Raft state yet (ErrBadConfig otherwise): a restore never overwrites a
// node's log.
func WriteSnapshot(dir string, index uint64, members []Server, snap raft.FSMSnapshot) error {
	if index == 0 || len(members) == 0 {
		return fmt.Errorf("sequencer: write snapshot: %w: index %d, %d members", ErrBadConfig, index, len(members))
	}
	conf := raft.Configuration{}
	for _, m := range members {
		if m.ID == "" || m.Addr == "" {
			return fmt.Errorf("sequencer: write snapshot: %w: member %+v needs an ID and an Addr", ErrBadConfig, m)
		}
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(m.ID), Address: raft.ServerAddress(m.Addr)})
	}
	st, err := InspectDataDir(dir)
	if err != nil {
		return fmt.Errorf("sequencer: write snapshot: %w", err)
	}
	if st.HasState {
		return fmt.Errorf("sequencer: write snapshot: %w: %s holds Raft state already: restore into an empty directory", ErrBadConfig, dir)
	}
	snaps, err := openSnapshotStore(dir, newHclogAdapter(discardLogger(), "snapshots"))
	if err != nil {
		return err
	}
	// The store encodes the configuration in the old peers format too, through a
	// transport; nothing is sent.
	_, trans := raft.NewInmemTransport(raft.ServerAddress(members[0].Addr))
	defer trans.Close()
	sink, err := snaps.Create(raft.SnapshotVersionMax, index, RestoreTerm, conf, index, trans)
	if err != nil {
		return fmt.Errorf("sequencer: write snapshot: %w", err)
	}
	if err := snap.Persist(sink); err != nil {
		return fmt.Errorf("sequencer: write snapshot: %w", err)
	}
	snap.Release()
	if _, err := checkSnapshots(dir, snaps); err != nil { // read back what was written
		return fmt.Errorf("sequencer: write snapshot: %w", err)
	}
	return nil
}
