package sequencer

// Checksummed log records. raft-boltdb stores each raft.Log as one msgpack value in
// bbolt, and bbolt checksums only its meta pages: a flipped byte in a stored entry reads
// back as a different entry, or as a decoding error at best. checkedLogs puts a CRC-32C of
// the entry (index, term, type, data, extensions) into the stored entry's Extensions and
// verifies it on every read: a damaged entry is an ErrLogCorrupt, never a wrong entry.
// The checksum exists on disk only; Raft and its peers see the entry as it was given.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/hashicorp/raft"
)

// ErrLogCorrupt is returned when a stored log entry fails its checksum (or has none where
// one is required). The node must not serve from that log: see docs/operations.md,
// "Replacing a node".
var ErrLogCorrupt = errors.New("sequencer: log entry corrupt")

// logTag starts the Extensions of every checksummed entry; the CRC-32C follows it, then
// the entry's own Extensions.
var logTag = [4]byte{'L', 'S', 'K', '1'}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkedLogs wraps a raft.LogStore with per-entry checksums.
type checkedLogs struct {
	raft.LogStore
	// legacy accepts entries without a checksum (written before checksums existed).
	legacy bool
}

// logSum is the CRC-32C of l's index, term, type, data and extensions.
func logSum(l *raft.Log, ext []byte) uint32 {
	var hdr [17]byte
	binary.LittleEndian.PutUint64(hdr[0:], l.Index)
	binary.LittleEndian.PutUint64(hdr[8:], l.Term)
	hdr[16] = byte(l.Type)
	c := crc32.Update(0, castagnoli, hdr[:])
	c = crc32.Update(c, castagnoli, l.Data)
	return crc32.Update(c, castagnoli, ext)
}

// seal returns a copy of l with its checksum in Extensions.
func seal(l *raft.Log) *raft.Log {
	out := *l
	ext := make([]byte, 0, len(logTag)+4+len(l.Extensions))
	ext = append(ext, logTag[:]...)
	ext = binary.LittleEndian.AppendUint32(ext, logSum(l, l.Extensions))
	out.Extensions = append(ext, l.Extensions...)
	return &out
}

// unseal verifies l's checksum and restores its own Extensions.
func (c *checkedLogs) unseal(index uint64, l *raft.Log) error {
	ext := l.Extensions
	if len(ext) < len(logTag)+4 || [4]byte(ext[:4]) != logTag {
		if c.legacy {
			return nil
		}
		return fmt.Errorf("%w: entry %d has no checksum", ErrLogCorrupt, index)
	}
	want := binary.LittleEndian.Uint32(ext[4:8])
	own := ext[8:]
	if len(own) == 0 {
		own = nil
	}
	if got := logSum(l, own); got != want || l.Index != index {
		return fmt.Errorf("%w: entry %d (stored index %d, term %d): checksum %08x, stored %08x",
			ErrLogCorrupt, index, l.Index, l.Term, got, want)
	}
	l.Extensions = own
	return nil
}

// GetLog implements raft.LogStore, verifying the entry's checksum.
func (c *checkedLogs) GetLog(index uint64, l *raft.Log) error {
	if err := c.LogStore.GetLog(index, l); err != nil {
		return err
	}
	return c.unseal(index, l)
}

// StoreLog implements raft.LogStore.
func (c *checkedLogs) StoreLog(l *raft.Log) error { return c.LogStore.StoreLog(seal(l)) }

// StoreLogs implements raft.LogStore.
func (c *checkedLogs) StoreLogs(logs []*raft.Log) error {
	sealed := make([]*raft.Log, len(logs))
	for i, l := range logs {
		sealed[i] = seal(l)
	}
	return c.LogStore.StoreLogs(sealed)
}

// verifyLog reads every entry of logs and checks its checksum; it returns the first
// failure (wrapping ErrLogCorrupt, or the store's error).
func verifyLog(logs raft.LogStore) (first, last uint64, err error) {
	if first, err = logs.FirstIndex(); err != nil {
		return 0, 0, err
	}
	if last, err = logs.LastIndex(); err != nil {
		return 0, 0, err
	}
	if last == 0 {
		return first, last, nil
	}
	var l raft.Log
	for i := first; i <= last; i++ {
		if err := logs.GetLog(i, &l); err != nil {
			return first, last, fmt.Errorf("log entry %d of %d..%d: %w", i, first, last, err)
		}
	}
	return first, last, nil
}
