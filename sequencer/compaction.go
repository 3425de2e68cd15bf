package sequencer

// Compaction by bytes. Raft compacts its log by entry count only (SnapshotThreshold, and
// TrailingLogs entries kept after a snapshot). With large entries that bounds nothing:
// 8,192 entries of 1 MiB stream records are 8 GiB before the first snapshot, and the
// 10,240 trailing entries another 10 GiB after it (raft.db grew to 1.2 GB in ten minutes
// this way). The Sequencer therefore counts the bytes of the entries applied since the
// last snapshot and asks Raft for a snapshot when they pass SnapshotBytes; before it does,
// it lowers TrailingLogs so that the entries kept hold about TrailingBytes (never more
// entries than Config.TrailingLogs). Each replica decides for its own log, as Raft does.
//
// Once the state is larger than SnapshotBytes, neither trigger comes before the log since
// the last snapshot is as large as that snapshot. A snapshot writes the whole state, so
// with a fixed trigger the bytes written per byte logged grow with the state: a 2 GiB
// state snapshotted every 64 MiB of log is 32 bytes of snapshot per byte of log. With the
// floor it is at most 1, whatever the state, at the price of a log (and a replay after a
// restart) of up to one state's size. The byte trigger is max(SnapshotBytes, the last
// snapshot's size); Raft's entry trigger is raised to the last snapshot's size in entries
// of the mean size applied before it, if that is more than SnapshotThreshold. A smaller
// state (the tests' clusters, with their frequent snapshots) sees no change.
// Config.NoSnapshotFloor turns the floor off.

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
// snapshot and to learn the size of each snapshot. Apply, Snapshot and Restore run on
// Raft's FSM goroutine, like the state machine it wraps; a snapshot's Persist on Raft's
// snapshot goroutine.
type byteCountingFSM struct {
	raft.BatchingFSM
	// bytes and entries since the last snapshot (or restore).
	bytes, entries atomic.Uint64
	base           uint64        // SnapshotBytes; 0: no byte trigger
	threshold      atomic.Uint64 // the byte trigger: max(base, snapBytes); 0: none
	trigger        chan struct{} // capacity 1: a snapshot is wanted
	// snapBytes is the size of the last snapshot persisted or restored; meanEntry the mean
	// bytes of the entries applied before the last snapshot (0: unknown). sized (capacity
	// 1) says snapBytes changed.
	snapBytes, meanEntry atomic.Uint64
	sized                chan struct{}
	floor                bool   // !Config.NoSnapshotFloor
	small                uint64 // a snapshot up to this size sets no floor: base, or DefaultSnapshotBytes without a byte trigger
}

func newByteCountingFSM(fsm raft.BatchingFSM, snapshotBytes uint64, floor bool) *byteCountingFSM {
	f := &byteCountingFSM{BatchingFSM: fsm, base: snapshotBytes, trigger: make(chan struct{}, 1), sized: make(chan struct{}, 1), floor: floor, small: snapshotBytes}
	if f.small == 0 {
		f.small = DefaultSnapshotBytes
	}
	f.threshold.Store(snapshotBytes)
	return f
}

func (f *byteCountingFSM) count(logs []*raft.Log) {
	var n uint64
	for _, l := range logs {
		n += uint64(len(l.Data))
	}
	total := f.bytes.Add(n)
	f.entries.Add(uint64(len(logs)))
	if th := f.threshold.Load(); th > 0 && total >= th {
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

// Snapshot implements raft.FSM: the count starts again at the snapshot's index, and the
// snapshot reports its size once persisted.
func (f *byteCountingFSM) Snapshot() (raft.FSMSnapshot, error) {
	snap, err := f.BatchingFSM.Snapshot()
	if err != nil {
		return nil, err
	}
	if b, e := f.bytes.Swap(0), f.entries.Swap(0); e > 0 {
		f.meanEntry.Store(max(1, b/e))
	}
	return &sizedSnapshot{FSMSnapshot: snap, fsm: f}, nil
}

// Restore implements raft.FSM: the count starts again at the snapshot's index, and the
// snapshot's size is the floor of the next.
func (f *byteCountingFSM) Restore(rc io.ReadCloser) error {
	f.bytes.Store(0)
	f.entries.Store(0)
	cr := &countingReader{ReadCloser: rc}
	err := f.BatchingFSM.Restore(cr)
	if err == nil {
		f.setSnapshotBytes(cr.n)
	}
	return err
}

// setSnapshotBytes records the size of the latest snapshot and raises the byte trigger
// to it.
func (f *byteCountingFSM) setSnapshotBytes(n uint64) {
	f.snapBytes.Store(n)
	if !f.floor {
		return
	}
	if f.base > 0 {
		f.threshold.Store(max(f.base, n))
	}
	select {
	case f.sized <- struct{}{}:
	default:
	}
}

// sizedSnapshot counts the bytes its FSMSnapshot persists.
type sizedSnapshot struct {
	raft.FSMSnapshot
	fsm *byteCountingFSM
}

// Persist implements raft.FSMSnapshot.
func (s *sizedSnapshot) Persist(sink raft.SnapshotSink) error {
	cs := &countingSink{SnapshotSink: sink}
	err := s.FSMSnapshot.Persist(cs)
	if err == nil {
		s.fsm.setSnapshotBytes(cs.n)
	}
	return err
}

type countingSink struct {
	raft.SnapshotSink
	n uint64
}

func (c *countingSink) Write(p []byte) (int, error) {
	n, err := c.SnapshotSink.Write(p)
	c.n += uint64(n)
	return n, err
}

type countingReader struct {
	io.ReadCloser
	n uint64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n += uint64(n)
	return n, err
}

// runByteCompaction takes a snapshot whenever the bytes applied since the last one pass
// the byte trigger, and raises Raft's entry trigger to the last snapshot's size. Started
// by Open when automatic snapshots are on; stops with s.stop.
func (s *Sequencer) runByteCompaction() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-s.counting.sized:
			s.raiseEntryTrigger()
			continue
		case <-s.counting.trigger:
		}
		bytes, entries := s.counting.bytes.Load(), s.counting.entries.Load()
		if th := s.counting.threshold.Load(); th == 0 || bytes < th || entries == 0 {
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

// raiseEntryTrigger sets Raft's SnapshotThreshold to the entries of the mean size
// applied before the last snapshot that add up to its size, if that snapshot is larger
// than the byte trigger's base, but never below Config.SnapshotThreshold.
func (s *Sequencer) raiseEntryTrigger() {
	n := s.cfg.SnapshotThreshold
	if size, mean := s.counting.snapBytes.Load(), s.counting.meanEntry.Load(); size > s.counting.small && mean > 0 {
		n = max(n, size/mean)
	}
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	rc := s.raft.ReloadableConfig()
	if rc.SnapshotThreshold == n {
		return
	}
	rc.SnapshotThreshold = n
	if err := s.raft.ReloadConfig(rc); err != nil {
		s.log.Warn("compaction: cannot set the snapshot threshold", "entries", n, "err", err)
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
