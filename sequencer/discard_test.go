package sequencer

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDiscardStateEitherStore: DiscardState removes the log of either store and the
// snapshots, and leaves the node's other files (a rebuild keeps its identity). A wal/ left
// behind would have a rebuilt node replay the log it diverged on.
func TestDiscardStateEitherStore(t *testing.T) {
	for _, store := range []string{boltFile, walDir} {
		t.Run(store, func(t *testing.T) {
			dir := t.TempDir()
			for _, d := range []string{walDir, "snapshots/1-2-3"} {
				if store == walDir || d != walDir {
					if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
						t.Fatal(err)
					}
				}
			}
			files := []string{"identity.json", "snapshots/1-2-3/state.bin"}
			if store == boltFile {
				files = append(files, boltFile)
			} else {
				files = append(files, filepath.Join(walDir, "wal-meta.db"), filepath.Join(walDir, "00000000000000000001-0000000000000000.wal"))
			}
			for _, f := range files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := DiscardState(dir); err != nil {
				t.Fatal(err)
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(ents) != 1 || ents[0].Name() != "identity.json" {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Fatalf("left %v, want only identity.json", names)
			}
			if _, ok, err := logStoreInDir(dir); ok || err != nil {
				t.Fatalf("a log store is still found (%v)", err)
			}
		})
	}
}
