package sequencer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
)

// TestLogStoreRestart writes entries with each log store, closes the node and reopens
// its data dir: the FSM is rebuilt by replaying the log, so every acknowledged entry is
// back (DESIGN.md invariant 4), and the store's files are the kind's own.
func TestLogStoreRestart(t *testing.T) {
	for _, tc := range []struct {
		kind, file string
	}{
		{LogStoreBolt, boltFile},
		{LogStoreWAL, walDir},
		{"", walDir}, // DefaultLogStore in a new data dir
	} {
		t.Run(fmt.Sprintf("kind=%q", tc.kind), func(t *testing.T) {
			leader := openSolo(t, "a", func(c *Config) { c.LogStoreKind = tc.kind })
			submitEntries(t, leader.seq, "x", 30)
			want := leader.fsm.state()
			if _, err := os.Stat(filepath.Join(leader.cfg.DataDir, tc.file)); err != nil {
				t.Fatalf("log store %q: %v", tc.kind, err)
			}
			if err := leader.seq.Close(); err != nil {
				t.Fatal(err)
			}
			cfg := leader.cfg
			cfg.RaftAddr = leader.seq.Addr()
			re := openNode(t, cfg, newTestFSM())
			waitLeader(t, []*node{re})
			testutil.WaitFor(t, 10*time.Second, func() error {
				if got := re.fsm.state(); got != want {
					return fmt.Errorf("replayed state %+v, want %+v", got, want)
				}
				return nil
			})
			if o := submitWait(t, re.seq, "after restart"); o.err != nil {
				t.Fatal(o.err)
			}
		})
	}
}

// TestLogStoreMismatch: a data dir written by one log store refuses the other, with
// ErrLogStoreMismatch and nothing created: an empty log of the other kind would forget
// every acknowledged entry.
func TestLogStoreMismatch(t *testing.T) {
	for i, tc := range []struct{ wrote, open string }{
		{LogStoreBolt, LogStoreWAL},
		{LogStoreWAL, LogStoreBolt},
	} {
		leader := openSolo(t, fmt.Sprintf("m%d", i), func(c *Config) { c.LogStoreKind = tc.wrote })
		if err := leader.seq.Close(); err != nil {
			t.Fatal(err)
		}
		before, err := os.ReadDir(leader.cfg.DataDir)
		if err != nil {
			t.Fatal(err)
		}
		cfg := leader.cfg
		cfg.LogStoreKind = tc.open
		if s, err := Open(cfg, newTestFSM()); !errors.Is(err, ErrLogStoreMismatch) {
			if err == nil {
				s.Close()
			}
			t.Errorf("#%d: open %s dir as %s: got %v, want ErrLogStoreMismatch", i, tc.wrote, tc.open, err)
		}
		after, err := os.ReadDir(leader.cfg.DataDir)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Errorf("#%d: refused open changed the data dir: %d entries, want %d", i, len(after), len(before))
		}
	}
}

// TestLogStoreDetect: with LogStoreKind empty, a data dir keeps the store it was created
// with (an upgrade that changed the default must not strand an existing log), and one
// holding both stores' files is refused.
func TestLogStoreDetect(t *testing.T) {
	for i, kind := range []string{LogStoreBolt, LogStoreWAL} {
		leader := openSolo(t, fmt.Sprintf("d%d", i), func(c *Config) { c.LogStoreKind = kind })
		submitEntries(t, leader.seq, "x", 5)
		want := leader.fsm.state()
		if err := leader.seq.Close(); err != nil {
			t.Fatal(err)
		}
		cfg := leader.cfg
		cfg.RaftAddr, cfg.LogStoreKind = leader.seq.Addr(), ""
		re := openNode(t, cfg, newTestFSM())
		waitLeader(t, []*node{re})
		testutil.WaitFor(t, 10*time.Second, func() error {
			if got := re.fsm.state(); got != want {
				return fmt.Errorf("#%d (%s): replayed state %+v, want %+v", i, kind, got, want)
			}
			return nil
		})
	}
	dir := t.TempDir()
	for _, f := range []string{boltFile, walDir} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := detectLogStore(dir); !errors.Is(err, ErrLogStoreMismatch) {
		t.Errorf("data dir with both stores: got %v, want ErrLogStoreMismatch", err)
	}
}

// TestLogStoreWALLocked: a second Open of a raft-wal data dir fails within the lock
// timeout rather than hanging on raft-wal's meta database (opened with no lock timeout).
func TestLogStoreWALLocked(t *testing.T) {
	cfg := testConfig(t, "a")
	cfg.LogStoreKind = LogStoreWAL
	openNode(t, cfg, newTestFSM())
	done := make(chan error, 1)
	go func() {
		s, err := Open(cfg, newTestFSM())
		if err == nil {
			s.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("second Open of %s: got nil error", cfg.DataDir)
		}
	case <-time.After(10 * boltOpenTimeout):
		t.Fatalf("second Open of a raft-wal data dir still waiting after %v", 10*boltOpenTimeout)
	}
}

// TestInspectEmptyWALDir: InspectDataDir on a data dir whose wal/ is empty (made by a
// caller before raft-wal ever ran there) reports no state and writes nothing: opening
// raft-wal would create its first segment outside the file system the node then uses
// (the fault harness's power-loss model, Config.WALFileSystem).
func TestInspectEmptyWALDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, walDir), 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := InspectDataDir(dir)
	if err != nil || st.HasState {
		t.Fatalf("InspectDataDir: %+v, %v; want no state", st, err)
	}
	if ents, err := os.ReadDir(filepath.Join(dir, walDir)); err != nil || len(ents) != 0 {
		t.Errorf("InspectDataDir wrote into wal/: %v, %v", ents, err)
	}
}
