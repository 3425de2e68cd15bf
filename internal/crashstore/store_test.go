package crashstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

func mustOpen(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSyncedSurvivesUnsyncedLost: what StoreLogs, DeleteRange and Set returned survives a
// reopen; bytes written and not fsynced (a write without sync, as a crash between the
// two leaves) are discarded by the next Open.
func TestSyncedSurvivesUnsyncedLost(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir)
	var logs []*raft.Log
	for i := uint64(1); i <= 5; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(1, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	// A crash after the write, before the fsync: entry 6 and a stable write.
	s.mu.Lock()
	if err := s.write(recLog, encodeLog(&raft.Log{Index: 6, Term: 2, Data: []byte("x")})); err != nil {
		t.Fatal(err)
	}
	s.mu.Unlock()
	if err := s.Set([]byte("a"), []byte("b")); err != nil { // syncs entry 6 too
		t.Fatal(err)
	}
	s.mu.Lock()
	if err := s.write(recLog, encodeLog(&raft.Log{Index: 7, Term: 2, Data: []byte("y")})); err != nil {
		t.Fatal(err)
	}
	s.mu.Unlock()
	s.Close()

	s = mustOpen(t, dir)
	defer s.Close()
	if s.Discarded == 0 {
		t.Error("nothing discarded: the unsynced entry 7 should have been")
	}
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if first != 3 || last != 6 {
		t.Fatalf("first %d last %d, want 3 and 6", first, last)
	}
	var l raft.Log
	if err := s.GetLog(7, &l); err != raft.ErrLogNotFound {
		t.Fatalf("entry 7: %v, want ErrLogNotFound", err)
	}
	if err := s.GetLog(4, &l); err != nil || l.Term != 1 || string(l.Data) != "\x04" {
		t.Fatalf("entry 4: %+v, %v", l, err)
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 7 {
		t.Fatalf("CurrentTerm %d, %v", v, err)
	}
	if _, err := s.Get([]byte("missing")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing key: %v, want hashicorp/raft's \"not found\"", err)
	}
	// Writes go on after the reopen, at the truncated end.
	if err := s.StoreLog(&raft.Log{Index: 7, Term: 3}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2 := mustOpen(t, dir)
	defer s2.Close()
	if err := s2.GetLog(7, &l); err != nil || l.Term != 3 || s2.Discarded != 0 {
		t.Fatalf("entry 7 after the rewrite: %+v, %v, discarded %d", l, err, s2.Discarded)
	}
}

// TestOpenRefusesDamage: a synced journal record that fails its checksum, or a journal
// shorter than its mark says was synced, fails Open instead of reading a wrong log.
func TestOpenRefusesDamage(t *testing.T) {
	for i, damage := range []func(t *testing.T, dir string){
		func(t *testing.T, dir string) { // one flipped byte inside entry 2's data
			path := filepath.Join(dir, journalFile)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			at := bytes.Index(b, []byte("entry-2"))
			if at < 0 {
				t.Fatal("entry 2 not in the journal")
			}
			b[at] ^= 1
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		func(t *testing.T, dir string) { // synced bytes gone
			if err := os.Truncate(filepath.Join(dir, journalFile), 10); err != nil {
				t.Fatal(err)
			}
		},
	} {
		dir := t.TempDir()
		s := mustOpen(t, dir)
		for j := uint64(1); j <= 3; j++ {
			if err := s.StoreLog(&raft.Log{Index: j, Term: 1, Data: []byte(fmt.Sprintf("entry-%d", j))}); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		damage(t, dir)
		if s, err := Open(dir); err == nil {
			s.Close()
			t.Errorf("#%d: Open of a damaged journal succeeded", i)
		}
	}
}
