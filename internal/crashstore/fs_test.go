package crashstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/segment"
)

func mustOpenFS(t *testing.T, dir string) *FS {
	t.Helper()
	fs, err := OpenFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestFSUnsyncedLost: bytes written through an FS file survive a restart (OpenFS) only if
// a Sync followed them; a created file keeps its preallocated size; a deleted file stays
// deleted; files FS did not create are left alone.
func TestFSUnsyncedLost(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "other"), []byte("not mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := mustOpenFS(t, dir)
	f, err := fs.Create(dir, "seg", 64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("synced"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("lost"), 10); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 14)
	if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, []byte("synced\x00\x00\x00\x00lost")) {
		t.Fatalf("before the crash, reads see every write: %q, %v", got, err)
	}
	f.Close()
	g, err := fs.Create(dir, "gone", 16)
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	if err := fs.Delete(dir, "gone"); err != nil {
		t.Fatal(err)
	}
	if names, err := fs.ListDir(dir); err != nil || fmt.Sprint(names) != "[other seg]" {
		t.Fatalf("ListDir: %v, %v; want [other seg]", names, err)
	}

	fs = mustOpenFS(t, dir) // the crash
	if fs.Discarded != 4 {
		t.Errorf("discarded %d bytes, want 4", fs.Discarded)
	}
	b, err := os.ReadFile(filepath.Join(dir, "seg"))
	if err != nil || len(b) != 64 || !bytes.Equal(b[:14], []byte("synced\x00\x00\x00\x00\x00\x00\x00\x00")) {
		t.Fatalf("after the crash: %q (%d bytes), %v", b, len(b), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone")); !os.IsNotExist(err) {
		t.Errorf("deleted file back after the crash: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "other")); string(b) != "not mine" {
		t.Errorf("a file FS did not create changed: %q", b)
	}
	// Writes through OpenWriter are imaged at Sync too.
	w, err := fs.OpenWriter(dir, "seg")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte("again"), 20); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if fs = mustOpenFS(t, dir); fs.Discarded != 0 {
		t.Errorf("discarded %d bytes of a synced write", fs.Discarded)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "seg")); !bytes.Equal(b[20:25], []byte("again")) {
		t.Errorf("synced write through OpenWriter lost: %q", b[:25])
	}
	// A file written before FS served the directory is adopted by OpenWriter: its
	// contents then are durable, later unsynced writes are not.
	if err := os.WriteFile(filepath.Join(dir, "older"), []byte("before"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err = fs.OpenWriter(dir, "older")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte("unsynced"), 6); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if fs = mustOpenFS(t, dir); fs.Discarded != 8 {
		t.Errorf("discarded %d bytes, want the 8 unsynced ones", fs.Discarded)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "older")); string(b) != "before" {
		t.Errorf("adopted file after the crash: %q, want %q", b, "before")
	}
}

// TestFSRaftWAL: raft-wal on an FS keeps every entry StoreLogs returned for, across
// restarts that discard the unsynced bytes, and across segment rotation and deletion.
func TestFSRaftWAL(t *testing.T) {
	dir := t.TempDir()
	open := func() *raftwal.WAL {
		fs := mustOpenFS(t, dir)
		w, err := raftwal.Open(dir, raftwal.WithSegmentSize(4096), raftwal.WithSegmentFiler(segment.NewFiler(dir, fs)))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := open()
	next := uint64(1)
	for round := range 3 {
		for range 20 {
			l := &raft.Log{Index: next, Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(next)}, 300)}
			if err := w.StoreLogs([]*raft.Log{l}); err != nil {
				t.Fatal(err)
			}
			next++
		}
		if round == 1 {
			if err := w.DeleteRange(1, 15); err != nil { // whole segments go
				t.Fatal(err)
			}
		}
		w.Close()
		w = open()
		first, _ := w.FirstIndex()
		last, _ := w.LastIndex()
		if last != next-1 || first < 1 || (round >= 1 && first == 1) {
			t.Fatalf("round %d: log %d..%d, want ..%d (head truncated after round 1)", round, first, last, next-1)
		}
		for i := first; i <= last; i++ {
			var l raft.Log
			if err := w.GetLog(i, &l); err != nil || l.Index != i || !bytes.Equal(l.Data, bytes.Repeat([]byte{byte(i)}, 300)) {
				t.Fatalf("round %d: entry %d: %+v, %v", round, i, l.Index, err)
			}
		}
	}
	w.Close()
}
