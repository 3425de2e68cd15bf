package sequencer

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
)

// TestSnapshotFloorBytes: a node restarts from a snapshot of 20 entries of 16 KiB (the
// test FSM keeps every entry in its state: 320 KiB). With a byte trigger of 64 KiB, 160
// KiB more of log take no snapshot (the floor is the restored snapshot's size); passing
// 320 KiB takes one.
func TestSnapshotFloorBytes(t *testing.T) {
	mod := func(c *Config) {
		c.SnapshotThreshold = 1 << 40
		c.SnapshotInterval = time.Hour
		c.SnapshotBytes, c.TrailingBytes = -1, 64<<10
	}
	n := openSolo(t, "solo", mod)
	pad := strings.Repeat("x", 16<<10)
	submit := func(s *Sequencer, from, to int) {
		for i := from; i < to; i++ {
			if o := submitWait(t, s, fmt.Sprintf("%d-%s", i, pad)); o.err != nil {
				t.Fatal(o.err)
			}
		}
	}
	submit(n.seq, 0, 20)
	if err := n.seq.Snapshot(); err != nil {
		t.Fatal(err)
	}
	size := n.seq.Stats().LastSnapshotBytes
	if size < 320<<10 {
		t.Fatalf("snapshot of 20 entries of 16 KiB: %d bytes", size)
	}
	if err := n.seq.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := n.cfg
	cfg.RaftAddr = n.seq.Addr()
	cfg.SnapshotBytes = 64 << 10
	re := openNode(t, cfg, newTestFSM())
	waitLeader(t, []*node{re})
	if got := re.seq.Stats().LastSnapshotBytes; got != size {
		t.Fatalf("restored a snapshot of %d bytes, stats say %d", size, got)
	}
	submit(re.seq, 20, 30)
	if st := re.seq.Stats(); st.ByteSnapshots != 0 {
		t.Fatalf("%d snapshots by bytes at %d bytes since a snapshot of %d", st.ByteSnapshots, st.BytesSinceSnapshot, size)
	}
	submit(re.seq, 30, 42)
	testutil.WaitFor(t, 10*time.Second, func() error {
		if st := re.seq.Stats(); st.ByteSnapshots != 1 {
			return fmt.Errorf("%d snapshots by bytes, %d bytes since the last of %d: want 1", st.ByteSnapshots, st.BytesSinceSnapshot, st.LastSnapshotBytes)
		}
		return nil
	})
}

// TestSnapshotFloorEntries: the entry trigger too waits for the last snapshot's size in
// log, once the state passes the byte trigger's base (8 KiB here). Entries of 1 KiB, each
// kept in the state: after snapshots by Raft's count of 4, Raft's threshold is raised to
// about the state's entries.
func TestSnapshotFloorEntries(t *testing.T) {
	n := openSolo(t, "solo", func(c *Config) {
		c.SnapshotThreshold = 4
		c.SnapshotInterval = 20 * time.Millisecond
		c.SnapshotBytes = 8 << 10
	})
	pad := strings.Repeat("y", 1<<10)
	for i := range 80 {
		submitWait(t, n.seq, fmt.Sprintf("%d-%s", i, pad))
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		last := raftStat(t, n.seq, "last_snapshot_index")
		th := n.seq.raft.ReloadableConfig().SnapshotThreshold
		if last < 16 || th < last/2 {
			return fmt.Errorf("last snapshot at index %d, Raft's snapshot threshold %d entries: want one at 16 or later, and the threshold at least half its index", last, th)
		}
		return nil
	})
}

// TestSnapshotFloorSmallState: a state under the byte trigger's base (64 MiB by default)
// sets no floor: Raft's entry trigger stays as configured.
func TestSnapshotFloorSmallState(t *testing.T) {
	n := openSolo(t, "solo", func(c *Config) {
		c.SnapshotThreshold = 4
		c.SnapshotInterval = 20 * time.Millisecond
	})
	pad := strings.Repeat("z", 1<<10)
	for i := range 40 {
		submitWait(t, n.seq, fmt.Sprintf("%d-%s", i, pad))
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		if last := raftStat(t, n.seq, "last_snapshot_index"); last < 16 {
			return fmt.Errorf("last snapshot at index %d, want 16 or later", last)
		}
		return nil
	})
	if th := n.seq.raft.ReloadableConfig().SnapshotThreshold; th != 4 {
		t.Fatalf("Raft's snapshot threshold %d after snapshots of a small state, want 4", th)
	}
}
