// Package crashstore models power loss for the Raft log, for tests: at a simulated crash,
// every write not yet fsynced is lost. The fault-injection harness (jepsen/) runs nodes on
// it (LOCKSTEP_FAULT_CRASH_STORE) under kill-all, and checks that nothing acknowledged is
// lost — that the node acknowledges only what its log store made durable. Two forms:
//
//   - FS (fs.go), a file system for raft-wal (the wal log store) through raft-wal's own
//     seam: the production store's code runs, on files whose unsynced writes are lost.
//   - Store, a log and stable store of its own, standing in for raft-boltdb (the bolt log
//     store), which has no file-system seam to put the model under.
//
// The rest of this comment is about Store.
//
// The store is a journal of records (log entries, deleted ranges, stable keys) in one
// file, and a mark file holding the journal's length at the last completed fsync. A write
// appends to the journal; Sync fsyncs it and then records the new length in the mark
// (fsynced too). Open truncates the journal to the mark before reading it: the bytes
// written after the last fsync are discarded, as a machine that loses power loses the
// pages its OS had not flushed — whereas a process killed with SIGKILL alone leaves them
// in the page cache, so kill -9 by itself never shows an fsync missing.
//
// StoreLog, StoreLogs, DeleteRange, Set and SetUint64 fsync before they return (in the
// jepsen_nosync build, a planted bug, StoreLogs fsyncs only when the last fsync is
// plantedSyncEvery old; FS's Sync has the same planted bug). The whole log is kept in
// memory; the journal is never compacted. Not for production.
//
// Contract: safe for concurrent use; Close once, after the Raft instance using it has
// shut down.
package crashstore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstepdb/lockstep/internal/planted"
)

// Files the store keeps in its directory.
const (
	journalFile = "crash-journal"
	markFile    = "crash-journal.synced"
)

// errNotFound is the stable store's answer for a missing key: hashicorp/raft compares
// the error text with "not found".
var errNotFound = errors.New("not found")

// Record kinds of the journal.
const (
	recLog    byte = 1 // a raft.Log
	recDelete byte = 2 // DeleteRange(min, max)
	recSet    byte = 3 // Set(key, value)
)

// Store is a raft.LogStore and raft.StableStore over a journal that loses its unsynced
// tail at each Open.
type Store struct {
	mu       sync.Mutex
	journal  *os.File
	mark     *os.File
	size     int64 // journal bytes written
	synced   int64 // journal bytes fsynced and marked
	logs     map[uint64]*raft.Log
	first    uint64
	last     uint64
	kv       map[string][]byte
	syncedAt time.Time // when sync last completed
	// Discarded is how many journal bytes the last Open threw away as unsynced.
	Discarded int64
}

// Open opens (or creates) the store in dir, discarding whatever was written after the last
// completed fsync.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	mark, err := os.OpenFile(filepath.Join(dir, markFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	journal, err := os.OpenFile(filepath.Join(dir, journalFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		mark.Close()
		return nil, err
	}
	s := &Store{journal: journal, mark: mark, logs: map[uint64]*raft.Log{}, kv: map[string][]byte{}}
	if err := s.load(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// load truncates the journal to the mark and replays it.
func (s *Store) load() error {
	var buf [8]byte
	n, err := s.mark.ReadAt(buf[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	var synced int64
	if n == 8 {
		synced = int64(binary.BigEndian.Uint64(buf[:]))
	}
	st, err := s.journal.Stat()
	if err != nil {
		return err
	}
	if st.Size() < synced {
		return fmt.Errorf("crashstore: journal of %d bytes, %d marked synced", st.Size(), synced)
	}
	s.Discarded = st.Size() - synced
	if err := s.journal.Truncate(synced); err != nil {
		return err
	}
	if err := s.journal.Sync(); err != nil {
		return err
	}
	r := bufio.NewReader(io.NewSectionReader(s.journal, 0, synced))
	for s.size < synced {
		kind, payload, n, err := readRecord(r)
		if err != nil {
			return fmt.Errorf("crashstore: record at %d: %w", s.size, err)
		}
		if err := s.apply(kind, payload); err != nil {
			return fmt.Errorf("crashstore: record at %d: %w", s.size, err)
		}
		s.size += n
	}
	s.synced = synced
	_, err = s.journal.Seek(synced, io.SeekStart)
	return err
}

// readRecord reads kind, length, payload and CRC; n is the record's size.
func readRecord(r io.Reader) (kind byte, payload []byte, n int64, err error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, 0, err
	}
	payload = make([]byte, binary.BigEndian.Uint32(hdr[1:]))
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, 0, err
	}
	var sum [4]byte
	if _, err := io.ReadFull(r, sum[:]); err != nil {
		return 0, nil, 0, err
	}
	if crc32.ChecksumIEEE(payload) != binary.BigEndian.Uint32(sum[:]) {
		return 0, nil, 0, errors.New("checksum mismatch")
	}
	return hdr[0], payload, int64(len(hdr) + len(payload) + len(sum)), nil
}

// apply applies one record to the in-memory state.
func (s *Store) apply(kind byte, p []byte) error {
	switch kind {
	case recLog:
		l, err := decodeLog(p)
		if err != nil {
			return err
		}
		s.logs[l.Index] = l
		if s.first == 0 || l.Index < s.first {
			s.first = l.Index
		}
		if l.Index > s.last {
			s.last = l.Index
		}
	case recDelete:
		if len(p) != 16 {
			return errors.New("bad delete record")
		}
		lo, hi := binary.BigEndian.Uint64(p), binary.BigEndian.Uint64(p[8:])
		for i := lo; i <= hi && i != 0; i++ {
			delete(s.logs, i)
			if i == hi {
				break
			}
		}
		if lo <= s.first {
			s.first = hi + 1
		}
		if hi >= s.last {
			s.last = lo - 1
		}
		if s.first > s.last || len(s.logs) == 0 {
			s.first, s.last = 0, 0
		}
	case recSet:
		if len(p) < 4 {
			return errors.New("bad set record")
		}
		k := binary.BigEndian.Uint32(p)
		if uint64(len(p)) < 4+uint64(k) {
			return errors.New("bad set record")
		}
		s.kv[string(p[4:4+k])] = append([]byte(nil), p[4+k:]...)
	default:
		return fmt.Errorf("unknown record kind %d", kind)
	}
	return nil
}

// write appends records to the journal and applies them; not synced.
func (s *Store) write(kind byte, payloads ...[]byte) error {
	var b []byte
	for _, p := range payloads {
		b = append(b, kind)
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
		b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(p))
	}
	if _, err := s.journal.Write(b); err != nil {
		return err
	}
	s.size += int64(len(b))
	for _, p := range payloads {
		if err := s.apply(kind, p); err != nil {
			return err
		}
	}
	return nil
}

// sync makes every write so far durable: fsync of the journal, then of the new mark.
func (s *Store) sync() error {
	if err := s.journal.Sync(); err != nil {
		return err
	}
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(s.size))
	if _, err := s.mark.WriteAt(buf[:], 0); err != nil {
		return err
	}
	if err := s.mark.Sync(); err != nil {
		return err
	}
	s.synced, s.syncedAt = s.size, time.Now()
	return nil
}

// Close closes the files; unsynced writes stay in the journal until the next Open.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.journal.Close(), s.mark.Close())
}

// FirstIndex implements raft.LogStore.
func (s *Store) FirstIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first, nil
}

// LastIndex implements raft.LogStore.
func (s *Store) LastIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, nil
}

// GetLog implements raft.LogStore.
func (s *Store) GetLog(index uint64, out *raft.Log) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.logs[index]
	if !ok {
		return raft.ErrLogNotFound
	}
	*out = *l
	return nil
}

// StoreLog implements raft.LogStore.
func (s *Store) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs implements raft.LogStore: the entries are durable when it returns (but in the
// jepsen_nosync build).
func (s *Store) StoreLogs(logs []*raft.Log) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := make([][]byte, len(logs))
	for i, l := range logs {
		ps[i] = encodeLog(l)
	}
	if err := s.write(recLog, ps...); err != nil {
		return err
	}
	if planted.NoSync { // a test-only build's planted bug; false in a normal build
		if time.Since(s.syncedAt) < plantedSyncEvery {
			return nil
		}
	}
	return s.sync()
}

// DeleteRange implements raft.LogStore.
func (s *Store) DeleteRange(lo, hi uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, lo), hi)
	if err := s.write(recDelete, p); err != nil {
		return err
	}
	return s.sync()
}

// Set implements raft.StableStore.
func (s *Store) Set(k, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := binary.BigEndian.AppendUint32(nil, uint32(len(k)))
	p = append(append(p, k...), v...)
	if err := s.write(recSet, p); err != nil {
		return err
	}
	return s.sync()
}

// Get implements raft.StableStore.
func (s *Store) Get(k []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[string(k)]
	if !ok {
		return nil, errNotFound
	}
	return append([]byte(nil), v...), nil
}

// SetUint64 implements raft.StableStore.
func (s *Store) SetUint64(k []byte, v uint64) error {
	return s.Set(k, binary.BigEndian.AppendUint64(nil, v))
}

// GetUint64 implements raft.StableStore.
func (s *Store) GetUint64(k []byte) (uint64, error) {
	v, err := s.Get(k)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("crashstore: %q holds %d bytes, not a uint64", k, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// encodeLog encodes l: index, term, type, data, extensions, appended-at.
func encodeLog(l *raft.Log) []byte {
	b := make([]byte, 0, 8+8+1+4+len(l.Data)+4+len(l.Extensions)+8)
	b = binary.BigEndian.AppendUint64(b, l.Index)
	b = binary.BigEndian.AppendUint64(b, l.Term)
	b = append(b, byte(l.Type))
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Extensions)))
	b = append(b, l.Extensions...)
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	return binary.BigEndian.AppendUint64(b, uint64(at))
}

// decodeLog decodes encodeLog's bytes.
func decodeLog(p []byte) (*raft.Log, error) {
	bad := errors.New("bad log record")
	if len(p) < 8+8+1+4 {
		return nil, bad
	}
	l := &raft.Log{Index: binary.BigEndian.Uint64(p), Term: binary.BigEndian.Uint64(p[8:]), Type: raft.LogType(p[16])}
	p = p[17:]
	n := binary.BigEndian.Uint32(p)
	p = p[4:]
	if uint64(len(p)) < uint64(n)+4 {
		return nil, bad
	}
	l.Data, p = append([]byte(nil), p[:n]...), p[n:]
	n = binary.BigEndian.Uint32(p)
	p = p[4:]
	if uint64(len(p)) != uint64(n)+8 {
		return nil, bad
	}
	if n > 0 {
		l.Extensions = append([]byte(nil), p[:n]...)
	}
	if at := int64(binary.BigEndian.Uint64(p[n:])); at != 0 {
		l.AppendedAt = time.Unix(0, at)
	}
	return l, nil
}
