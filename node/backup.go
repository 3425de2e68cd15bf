package node

// Serving backups (wire.OpBackup). A backup is a snapshot of the node's applied state,
// taken by Raft between two applies while writes go on (sequencer.Backup), wrapped in
// package backup's file format and read by the client in parts, one request each, on one
// connection. The node reads the snapshot twice: once to compute the checksum the header
// carries, once to send it; neither pass holds more than a buffer, whatever the size of
// the state.

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/internal/backup"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/vmihailenco/msgpack/v5"
)

// backupChunkBytes is the most bytes of a backup one response carries.
const backupChunkBytes = 1 << 20

// backupStartTimeout bounds taking the snapshot and computing its checksum.
const backupStartTimeout = 10 * time.Minute

// backupStream is a backup being read on one connection.
type backupStream struct {
	id     uint64
	index  uint64        // the log index of the state
	prefix []byte        // the magic and header lines
	rc     io.ReadCloser // the state machine's snapshot, from its start
	off    int64         // bytes of the file sent so far
	size   int64         // the file's length
}

// backups is a connection's backup in progress: one at a time.
type backups struct {
	mu     sync.Mutex
	cur    *backupStream
	next   uint64
	closed bool // the connection has closed: no backup starts
}

// replace makes s the connection's backup, ending the one before; false (s closed) if the
// connection has closed meanwhile.
func (b *backups) replace(s *backupStream) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		s.rc.Close()
		return false
	}
	if b.cur != nil {
		b.cur.rc.Close()
	}
	b.next++
	s.id = b.next
	b.cur = s
	return true
}

// close ends the connection's backup, if any, and any later start.
func (b *backups) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.cur != nil {
		b.cur.rc.Close()
		b.cur = nil
	}
}

// backup serves OpBackup.
func (cc *clientConn) backup(req *wire.Request) {
	n := cc.n
	if req.Sub != 0 {
		cc.backupChunk(req) // of a snapshot taken: the node's readiness since changes nothing
		return
	}
	if err := n.ready(); err != nil {
		cc.fail(req.ID, err)
		return
	}
	id := req.ID
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		ctx, cancel := context.WithTimeout(n.ctx, backupStartTimeout)
		defer cancel()
		s, err := n.startBackup(ctx)
		if err != nil {
			cc.fail(id, fmt.Errorf("backup: %w", err))
			return
		}
		if !cc.backups.replace(s) {
			return // nobody to answer
		}
		v, err := msgpack.Marshal(&wire.BackupStart{ID: s.id, Index: s.index, Size: s.size, Header: s.prefix[len(backup.Magic) : len(s.prefix)-1]})
		if err != nil {
			cc.fail(id, err)
			return
		}
		n.log.Info("backup started", "identity", cc.who.Name, "index", s.index, "bytes", s.size)
		cc.reply(&wire.Response{ID: id, Value: v, Index: s.index})
	}()
}

// backupChunk answers the OpBackup that reads the next part of the backup req.Sub.
func (cc *clientConn) backupChunk(req *wire.Request) {
	b := &cc.backups
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.cur
	switch {
	case s == nil || s.id != req.Sub:
		cc.fail(req.ID, fmt.Errorf("%w: backup %d is not in progress on this connection (start again)", wire.ErrBadArguments, req.Sub))
		return
	case int64(req.Offset) != s.off:
		cc.fail(req.ID, fmt.Errorf("%w: backup %d: offset %d asked, the next byte is %d", wire.ErrBadArguments, req.Sub, req.Offset, s.off))
		return
	}
	want := int64(backupChunkBytes)
	if req.Max > 0 && int64(req.Max) < want {
		want = int64(req.Max)
	}
	want = min(want, s.size-s.off)
	buf := make([]byte, 0, want)
	if p := int64(len(s.prefix)); s.off < p {
		k := min(p-s.off, want)
		buf = append(buf, s.prefix[s.off:s.off+k]...)
	}
	if rest := want - int64(len(buf)); rest > 0 {
		part := buf[len(buf) : len(buf)+int(rest)]
		if _, err := io.ReadFull(s.rc, part); err != nil {
			s.rc.Close()
			b.cur = nil
			cc.fail(req.ID, fmt.Errorf("backup %d: read snapshot: %w", req.Sub, err))
			return
		}
		buf = buf[:len(buf)+int(rest)]
	}
	s.off += int64(len(buf))
	if s.off == s.size {
		s.rc.Close()
		b.cur = nil
		cc.n.log.Info("backup sent", "identity", cc.who.Name, "bytes", s.size)
	}
	cc.reply(&wire.Response{ID: req.ID, Value: buf, NextOffset: uint64(s.off)})
}

// startBackup snapshots the state and returns the backup of it, ready to send.
func (n *Node) startBackup(ctx context.Context) (*backupStream, error) {
	snap, err := n.seq.Backup(ctx)
	if err != nil {
		return nil, err
	}
	// Open every reader at once: the store may remove the snapshot later (a reader opened
	// before reads on).
	var rcs [3]io.ReadCloser
	for i := range rcs {
		if rcs[i], err = snap.Open(); err != nil {
			for _, rc := range rcs[:i] {
				rc.Close()
			}
			return nil, err
		}
	}
	defer rcs[0].Close()
	defer rcs[1].Close()
	info, err := replica.ReadSnapshotInfo(rcs[0])
	if err != nil {
		rcs[2].Close()
		return nil, err
	}
	h := backup.Header{Format: backup.FormatVersion, Index: snap.Index, Term: snap.Term, ClusterID: info.ClusterID,
		ClusterVersion: info.ClusterVersion, Partitions: info.Partitions, Node: n.cfg.ID,
		Time: time.Now().UTC().Format(time.RFC3339Nano), Size: snap.Size, Hashes: info.State.Hashes, Meta: info.State.Meta}
	if info.Applied != snap.Index {
		rcs[2].Close()
		return nil, fmt.Errorf("snapshot of index %d holds the state at %d", snap.Index, info.Applied)
	}
	d := backup.Summer(h)
	if k, err := io.Copy(d, rcs[1]); err != nil || k != snap.Size {
		rcs[2].Close()
		return nil, fmt.Errorf("read snapshot for its checksum: %d of %d bytes: %v", k, snap.Size, err)
	}
	h = backup.Seal(h, d)
	prefix := backup.Prefix(h)
	return &backupStream{index: h.Index, prefix: prefix, rc: rcs[2], size: int64(len(prefix)) + snap.Size}, nil
}
