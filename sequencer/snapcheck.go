package sequencer

// Checked snapshot metadata. raft.FileSnapshotStore keeps a snapshot as state.bin (the
// state machine's bytes) and meta.json (the log index and term the snapshot stands for,
// the Raft configuration at it, the state file's size and CRC-64). The CRC covers
// state.bin only: one flipped digit of meta.json's index or term makes Raft take the
// snapshot for another log position — it would then replay the wrong log entries after
// it — and a flipped byte of its configuration changes a member's address, with no error.
//
// checkedSnapshots puts a copy of that metadata at the start of state.bin, where the
// CRC-64 covers it, and on every Open compares meta.json with it and with the state file's
// size: a difference is an ErrSnapshotCorrupt. Raft, and the peers a snapshot is sent to,
// see the state machine's bytes alone (Open skips the copy and reports their size), so a
// follower that installs a snapshot writes its own copy from the metadata it is given.
// Snapshots written before the copy existed (no header) are opened as they are.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// snapMagic starts the metadata copy at the head of a checked snapshot's state file.
var snapMagic = [8]byte{'L', 'S', 'S', 'N', 'A', 'P', 0, 1}

// snapHeaderFixed is the size of the header's fixed part: the magic and the body length.
const snapHeaderFixed = len(snapMagic) + 4

// maxSnapHeaderBytes bounds the header body a damaged length could make Open read.
const maxSnapHeaderBytes = 16 << 20

// checkedSnapshots wraps a raft.FileSnapshotStore in dir (its files under dir/snapshots).
type checkedSnapshots struct {
	*raft.FileSnapshotStore
	dir string
}

// snapHeader returns the header recording version, index, term, configuration and
// configurationIndex.
func snapHeader(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration, configurationIndex uint64) []byte {
	conf := raft.EncodeConfiguration(configuration)
	body := binary.AppendUvarint(nil, uint64(version))
	body = binary.AppendUvarint(body, index)
	body = binary.AppendUvarint(body, term)
	body = binary.AppendUvarint(body, configurationIndex)
	body = append(body, conf...)
	h := append(snapMagic[:len(snapMagic):len(snapMagic)], make([]byte, 4)...)
	binary.LittleEndian.PutUint32(h[len(snapMagic):], uint32(len(body)))
	return append(h, body...)
}

// Create implements raft.SnapshotStore: the sink it returns starts with the header.
func (s *checkedSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.FileSnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	if _, err := sink.Write(snapHeader(version, index, term, configuration, configurationIndex)); err != nil {
		sink.Cancel()
		return nil, fmt.Errorf("sequencer: snapshot header: %w", err)
	}
	return sink, nil
}

// Open implements raft.SnapshotStore: it checks meta.json against the header and the
// state file's size, and returns the metadata with Size the state machine's bytes and a
// reader of them.
func (s *checkedSnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := s.FileSnapshotStore.Open(id)
	if err != nil {
		return nil, nil, err
	}
	fail := func(format string, args ...any) (*raft.SnapshotMeta, io.ReadCloser, error) {
		rc.Close()
		return nil, nil, fmt.Errorf("%w: snapshot %s: %s", ErrSnapshotCorrupt, id, fmt.Sprintf(format, args...))
	}
	fi, err := os.Stat(filepath.Join(s.dir, "snapshots", id, "state.bin"))
	if err != nil {
		return fail("state file: %v", err)
	}
	if fi.Size() != meta.Size {
		return fail("meta.json records %d bytes of state, the state file has %d", meta.Size, fi.Size())
	}
	var fixed [snapHeaderFixed]byte
	n, err := io.ReadFull(rc, fixed[:])
	if err != nil || [8]byte(fixed[:8]) != snapMagic {
		// Written before the header existed: the state machine's bytes from the start.
		return meta, readCloser{io.MultiReader(bytes.NewReader(slices.Clone(fixed[:n])), rc), rc}, nil
	}
	size := binary.LittleEndian.Uint32(fixed[len(snapMagic):])
	if size > maxSnapHeaderBytes || int64(size)+int64(snapHeaderFixed) > meta.Size {
		return fail("header of %d bytes in a state file of %d", size, meta.Size)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(rc, body); err != nil {
		return fail("header: %v", err)
	}
	want := snapHeader(meta.Version, meta.Index, meta.Term, meta.Configuration, meta.ConfigurationIndex)
	if !bytes.Equal(want[snapHeaderFixed:], body) {
		return fail("meta.json (index %d, term %d, configuration index %d, %d servers) differs from the copy in the state file%s",
			meta.Index, meta.Term, meta.ConfigurationIndex, len(meta.Configuration.Servers), describeHeader(body))
	}
	m := *meta
	m.Size -= int64(snapHeaderFixed) + int64(size)
	return &m, rc, nil
}

// describeHeader returns ", which says index I, term T, ..." for a header body, or ""
// if it cannot be read.
func describeHeader(body []byte) string {
	var v [4]uint64
	for i := range v {
		x, n := binary.Uvarint(body)
		if n <= 0 {
			return ""
		}
		v[i], body = x, body[n:]
	}
	return fmt.Sprintf(" (index %d, term %d, configuration index %d)", v[1], v[2], v[3])
}

// readCloser reads from r and closes c.
type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }

// openSnapshotStore opens dir's FileSnapshotStore with checked metadata.
func openSnapshotStore(dir string, logger hclog.Logger) (*checkedSnapshots, error) {
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, snapshotsRetained, logger)
	if err != nil {
		return nil, fmt.Errorf("sequencer: open snapshot store: %w", err)
	}
	return &checkedSnapshots{FileSnapshotStore: snaps, dir: dir}, nil
}
