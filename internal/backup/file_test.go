package backup

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFile: a good backup lands at its path alone; a failed write, a file that does
// not verify and an existing path leave nothing new behind, with the error.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	good := file(testHeader, []byte("state"))
	path := filepath.Join(dir, "b.lsb")
	if err := WriteFile(path, func(w io.Writer) error { _, err := w.Write(good); return err }); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, good) {
		t.Fatalf("read back: %v (%d bytes, want %d)", err, len(got), len(good))
	}
	if err := WriteFile(path, func(io.Writer) error { t.Fatal("wrote over an existing file"); return nil }); !errors.Is(err, os.ErrExist) {
		t.Errorf("existing path: %v, want ErrExist", err)
	}
	boom := errors.New("boom")
	bad := filepath.Join(dir, "bad.lsb")
	if err := WriteFile(bad, func(w io.Writer) error { w.Write(good[:10]); return boom }); !errors.Is(err, boom) {
		t.Errorf("failed write: %v, want boom", err)
	}
	if err := WriteFile(bad, func(w io.Writer) error { _, err := w.Write(good[:len(good)-1]); return err }); !errors.Is(err, ErrBadBackup) {
		t.Errorf("truncated file: %v, want ErrBadBackup", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "b.lsb" {
		t.Errorf("left behind: %v, want b.lsb alone", entries)
	}
}
