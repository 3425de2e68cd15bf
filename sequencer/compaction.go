package sequencer

// Compaction by bytes. Raft compacts its log by entry count only (SnapshotThreshold, and
// TrailingLogs entries kept after a snapshot). With large entries that bounds nothing:
// 8,192 entries of 1 MiB stream records are 8 GiB before the first snapshot, and the
// 10,240 trailing entries another 10 GiB after it (raft.db grew to 1.2 GB in ten minutes
// this way). The Sequencer therefore counts the bytes of the entries applied since the
// last snapshot and asks Raft for a snapshot when they pass SnapshotBytes; before it does,
// it lowers TrailingLogs so that the entries kept hold about TrailingBytes (never more
// entries than Config.TrailingLogs). Each replica decides for its own log, as Raft does.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// byteCountingFSM wraps the state machine to count the bytes applied since the last
// snapshot. It runs on Raft's FSM goroutine, like the state machine it wraps.
type byteCountingFSM struct {
	raft.BatchingFSM
	// bytes and entries since the last snapshot (or restore).
	bytes, entries atomic.Uint64
	threshold      uint64        // SnapshotBytes; 0: no byte trigger
	trigger        chan struct{} // capacity 1: a snapshot is wanted
}

func (f *byteCountingFSM) count(logs []*raft.Log) {
	var n uint64
	for _, l := range logs {
		n += uint64(len(l.Data))
	}
	total := f.bytes.Add(n)
	f.entries.Add(uint64(len(logs)))
	if f.threshold > 0 && total >= f.threshold {
		select {
		case f.trigger <- struct{}{}:
		default:
		}
	}
}

// Apply implements raft.FSM.
func (f *byteCountingFSM) Apply(l *raft.Log) any {
	r := f.BatchingFSM.Apply(l)
	f.count([]*raft.Log{l})
	return r
}

// ApplyBatch implements raft.BatchingFSM.
func (f *byteCountingFSM) ApplyBatch(logs []*raft.Log) []any {
	r := f.BatchingFSM.ApplyBatch(logs)
	f.count(logs)
	return r
}

// Snapshot implements raft.FSM: the count starts again at the snapshot's index.
func (f *byteCountingFSM) Snapshot() (raft.FSMSnapshot, error) {
	snap, err := f.BatchingFSM.Snapshot()
	if err == nil {
		f.bytes.Store(0)
		f.entries.Store(0)
	}
	return snap, err
}

// Restore implements raft.FSM: the count starts again at the snapshot's index.
func (f *byteCountingFSM) Restore(rc io.ReadCloser) error {
	f.bytes.Store(0)
	f.entries.Store(0)
	return f.BatchingFSM.Restore(rc)
}

// runByteCompaction takes a snapshot whenever the bytes applied since the last one pass
// Config.SnapshotBytes. Started by Open when automatic snapshots are on; stops with s.stop.
func (s *Sequencer) runByteCompaction() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-s.counting.trigger:
		}
		bytes, entries := s.counting.bytes.Load(), s.counting.entries.Load()
		if bytes < s.counting.threshold || entries == 0 {
			continue // a snapshot by entry count came first
		}
		trailing := s.cfg.TrailingLogs
		if per := bytes / entries; per > 0 && s.cfg.TrailingBytes > 0 {
			trailing = max(1, min(trailing, uint64(s.cfg.TrailingBytes)/per))
		}
		s.compactMu.Lock()
		if err := s.reloadTrailing(trailing); err != nil {
			s.log.Warn("compaction by bytes: cannot set trailing logs", "err", err)
		}
		err := s.raft.Snapshot().Error()
		s.compactMu.Unlock()
		switch {
		case err == nil:
			s.counters.byteSnapshots.Add(1)
			s.log.Info("snapshot by bytes", "bytes_since_last", bytes, "entries", entries, "trailing_logs", trailing)
		case errors.Is(err, raft.ErrNothingNewToSnapshot), errors.Is(err, raft.ErrRaftShutdown):
		default:
			s.log.Warn("snapshot by bytes failed", "err", err)
		}
	}
}

// reloadTrailing sets Raft's TrailingLogs to n.
func (s *Sequencer) reloadTrailing(n uint64) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	rc := s.raft.ReloadableConfig()
	if rc.TrailingLogs == n {
		return nil
	}
	rc.TrailingLogs = n
	return s.raft.ReloadConfig(rc)
}

// CompactAll snapshots the FSM now and compacts the log up to the snapshot, keeping no
// trailing entries, whether or not automatic snapshots are on. It returns the snapshot's
// index. A follower whose log is behind the first entry kept then receives this snapshot
// and the entries after it (InstallSnapshot), not the log from its start: a replica
// rebuilt after a divergence must not replay the entries it diverged on with its own
// code (node/rebuild.go). Followers merely behind also receive the snapshot. TrailingLogs
// is back to its configured value when CompactAll returns (the compaction by bytes may
// lower it again). With nothing applied since the last snapshot, it returns an error
// wrapping raft.ErrNothingNewToSnapshot: have an entry applied first.
func (s *Sequencer) CompactAll(ctx context.Context) (uint64, error) {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	if err := s.reloadTrailing(0); err != nil {
		return 0, fmt.Errorf("sequencer: compact: %w", err)
	}
	defer func() {
		if err := s.reloadTrailing(s.cfg.TrailingLogs); err != nil {
			s.log.Warn("compact: cannot restore trailing logs", "err", err)
		}
	}()
	var fut raft.SnapshotFuture
	if _, err := s.await(ctx, "compact", func(time.Duration) raft.Future { fut = s.raft.Snapshot(); return fut }); err != nil {
		return 0, err
	}
	meta, rc, err := fut.Open()
	if err != nil {
		return 0, fmt.Errorf("sequencer: compact: open snapshot: %w", err)
	}
	rc.Close()
	s.log.Info("log compacted to a snapshot", "index", meta.Index)
	return meta.Index, nil
}

// FirstLogIndex returns the first index the log still holds (0: none). A follower that
// needs an entry before it gets the latest snapshot instead of the entries.
func (s *Sequencer) FirstLogIndex() (uint64, error) {
	i, err := s.parts.logs.FirstIndex()
	if err != nil {
		return 0, fmt.Errorf("sequencer: first log index: %w", err)
	}
	return i, nil
}
