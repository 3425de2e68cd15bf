package sequencer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/raft"
)

// soloSnapshot runs a one-voter cluster in a new data directory, writes entries, takes a
// snapshot and stops; it returns the config and the snapshot's directory.
func soloSnapshot(t *testing.T) (Config, string) {
	t.Helper()
	cfg := testConfig(t, "solo")
	solo(&cfg)
	n := openNode(t, cfg, newTestFSM())
	if err := n.seq.Bootstrap([]Server{{ID: n.id, Addr: n.seq.Addr()}}); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, []*node{n})
	for i := range 10 {
		submitWait(t, n.seq, fmt.Sprintf("meta-%03d", i))
	}
	if err := n.seq.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if err := n.seq.Close(); err != nil {
		t.Fatal(err)
	}
	dirs, _ := filepath.Glob(filepath.Join(cfg.DataDir, "snapshots", "*"))
	if len(dirs) != 1 {
		t.Fatalf("snapshot directories %v", dirs)
	}
	return cfg, dirs[0]
}

// TestSnapshotMetaFlipDetected: one flipped byte in a field of a snapshot's meta.json —
// the index or term it stands for, its configuration's index or a member's address, the
// state's size — is ErrSnapshotCorrupt from CheckDataDir and Open. raft.FileSnapshotStore
// checks the CRC of state.bin only, and would restore such a snapshot as another log
// position (or with another member address).
func TestSnapshotMetaFlipDetected(t *testing.T) {
	for _, field := range []string{`"Index":\s*\d*(\d)`, `"Term":\s*\d*(\d)`, `"ConfigurationIndex":\s*\d*(\d)`,
		`"Size":\s*\d*(\d)`, `"Address":\s*"127\.0\.0\.1:\d*(\d)"`} {
		t.Run(field, func(t *testing.T) {
			cfg, dir := soloSnapshot(t)
			if st, err := CheckDataDir(cfg.DataDir, false); err != nil || st.Snapshots != 1 {
				t.Fatalf("intact: %+v, %v", st, err)
			}
			path := filepath.Join(dir, "meta.json")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			loc := regexp.MustCompile(field).FindSubmatchIndex(b)
			if loc == nil {
				t.Fatalf("%s not in %s", field, b)
			}
			b[loc[2]] ^= 0x01 // a digit stays a digit
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := CheckDataDir(cfg.DataDir, false); !errors.Is(err, ErrSnapshotCorrupt) {
				t.Fatalf("CheckDataDir: got %v, want ErrSnapshotCorrupt", err)
			}
			cfg.RaftAddr = "127.0.0.1:0"
			if s, err := Open(cfg, newTestFSM()); !errors.Is(err, ErrSnapshotCorrupt) {
				if err == nil {
					s.Close()
				}
				t.Fatalf("Open: got %v, want ErrSnapshotCorrupt", err)
			}
		})
	}
}

// TestSnapshotHeaderRoundTrip: Open of a checked snapshot returns the state machine's
// bytes alone, with Size their count (what a peer installing it receives); a snapshot
// written without the header (before it existed) opens as it was written.
func TestSnapshotHeaderRoundTrip(t *testing.T) {
	dir := t.TempDir()
	store, err := openSnapshotStore(dir, newHclogAdapter(discardLogger(), "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	conf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: "n1", Address: "127.0.0.1:7001"}}}
	_, trans := raft.NewInmemTransport("127.0.0.1:7001")
	state := []byte(`{"the":"state machine's bytes"}`)
	write := func(s raft.SnapshotStore, index uint64) string {
		sink, err := s.Create(raft.SnapshotVersionMax, index, 2, conf, 1, trans)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sink.Write(state); err != nil {
			t.Fatal(err)
		}
		if err := sink.Close(); err != nil {
			t.Fatal(err)
		}
		return sink.ID()
	}
	for _, tc := range []struct {
		name string
		id   string
	}{
		{"checked", write(store, 10)},
		{"legacy", write(store.FileSnapshotStore, 20)},
	} {
		meta, rc, err := store.Open(tc.id)
		if err != nil {
			t.Fatalf("%s: Open: %v", tc.name, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, state) || meta.Size != int64(len(state)) {
			t.Fatalf("%s: read %q (size %d), %v; want %q (size %d)", tc.name, got, meta.Size, err, state, len(state))
		}
	}
	if n, err := checkSnapshots(dir, store); err != nil || n != 2 {
		t.Fatalf("checkSnapshots: %d, %v", n, err)
	}
}
