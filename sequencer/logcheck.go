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
	"time"

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
	// timers, if set, receives StoreLogs's durations (leader or follower persist).
	timers *stageTimers
}

// sumHeaderBytes is the size of the header logSum checksums before the data: index, term
// and type.
const sumHeaderBytes = 17

// logSum is the CRC-32C of l's index, term, type, data and extensions. hdr is scratch
// space of sumHeaderBytes for the header: the caller provides it because crc32 makes any
// buffer it reads escape to the heap, and a batch can share one.
func logSum(l *raft.Log, ext, hdr []byte) uint32 {
	hdr = hdr[:sumHeaderBytes]
	binary.LittleEndian.PutUint64(hdr[0:], l.Index)
	binary.LittleEndian.PutUint64(hdr[8:], l.Term)
	hdr[16] = byte(l.Type)
	c := crc32.Update(0, castagnoli, hdr)
	c = crc32.Update(c, castagnoli, l.Data)
	return crc32.Update(c, castagnoli, ext)
}

// sealBytes is what sealing adds to an entry's Extensions: logTag and the CRC-32C.
const sealBytes = len(logTag) + 4

// appendSeal appends l's sealed Extensions (logTag, checksum, l's own) to b; hdr is
// logSum's scratch, not overlapping b's free capacity.
func appendSeal(b []byte, l *raft.Log, hdr []byte) []byte {
	b = append(b, logTag[:]...)
	b = binary.LittleEndian.AppendUint32(b, logSum(l, l.Extensions, hdr))
	return append(b, l.Extensions...)
}

// sealAll returns copies of logs with their checksums in Extensions, in three allocations
// however many entries there are: the entries, their pointers, and one buffer holding
// logSum's scratch and every entry's Extensions.
func sealAll(logs []*raft.Log) []*raft.Log {
	n := sumHeaderBytes
	for _, l := range logs {
		n += sealBytes + len(l.Extensions)
	}
	buf := make([]byte, sumHeaderBytes, n)
	hdr, ext := buf[:sumHeaderBytes], buf[sumHeaderBytes:]
	sealed := make([]raft.Log, len(logs))
	ptrs := make([]*raft.Log, len(logs))
	for i, l := range logs {
		start := len(ext)
		ext = appendSeal(ext, l, hdr)
		sealed[i] = *l
		sealed[i].Extensions = ext[start:len(ext):len(ext)]
		ptrs[i] = &sealed[i]
	}
	return ptrs
}

// unseal verifies l's checksum and restores its own Extensions.
func (c *checkedLogs) unseal(index uint64, l *raft.Log) error {
	ext := l.Extensions
	if len(ext) < sealBytes || [4]byte(ext[:4]) != logTag {
		if c.legacy {
			return nil
		}
		return fmt.Errorf("%w: entry %d has no checksum", ErrLogCorrupt, index)
	}
	want := binary.LittleEndian.Uint32(ext[4:8])
	own := ext[sealBytes:]
	if len(own) == 0 {
		own = nil
	}
	var hdr [sumHeaderBytes]byte
	if got := logSum(l, own, hdr[:]); got != want || l.Index != index {
		return fmt.Errorf("%w: entry %d (stored index %d, term %d): checksum %08x, stored %08x",
			ErrLogCorrupt, index, l.Index, l.Term, got, want)
	}
	l.Extensions = own
	return nil
}

// GetLog implements raft.LogStore, verifying the entry's checksum.
//
// An index below the store's first is ErrLogNotFound whatever the store returns:
// raft-wal v0.4.1 looks in its tail segment first and still finds entries a head
// truncation removed when they sit in that segment (its files are only freed whole), so
// a leader that compacted its log to a snapshot would replay the compacted entries to a
// follower instead of sending the snapshot — to a rebuilt divergent replica, the very
// entries it diverged on. Raft asks for an entry below FirstIndex exactly to learn that
// it must send a snapshot.
func (c *checkedLogs) GetLog(index uint64, l *raft.Log) error {
	if c.IsMonotonic() { // raft-wal; raft-boltdb deletes the keys
		first, err := c.LogStore.FirstIndex()
		if err != nil {
			return err
		}
		if index < first {
			return raft.ErrLogNotFound
		}
	}
	if err := c.LogStore.GetLog(index, l); err != nil {
		return err
	}
	return c.unseal(index, l)
}

// IsMonotonic implements raft.MonotonicLogStore with the wrapped store's answer (as
// raft.LogCache does). raft-wal accepts only contiguous indexes: after installing a
// snapshot, Raft must empty a monotonic store (removeOldLogs) rather than keep its
// trailing entries and leave a gap before the next append, which raft-wal refuses
// ("non-monotonic log entries") — the follower would never catch up. Hiding the
// capability behind this wrapper did exactly that.
func (c *checkedLogs) IsMonotonic() bool {
	m, ok := c.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// StoreLog implements raft.LogStore.
func (c *checkedLogs) StoreLog(l *raft.Log) error {
	return c.LogStore.StoreLog(sealAll([]*raft.Log{l})[0])
}

// StoreLogs implements raft.LogStore.
func (c *checkedLogs) StoreLogs(logs []*raft.Log) error {
	if c.timers == nil {
		return c.LogStore.StoreLogs(sealAll(logs))
	}
	leader, start := c.timers.isLeader(), time.Now()
	err := c.LogStore.StoreLogs(sealAll(logs))
	if err == nil {
		c.timers.persisted(start, leader)
	}
	return err
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
