package sequencer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/lockstepdb/lockstep/internal/testutil"
)

// TestAddNonvoterThenPromote: a learner receives the log without counting towards the
// quorum, reports its suffrage, and becomes a voter when promoted (DESIGN.md section 7,
// replacement).
func TestAddNonvoterThenPromote(t *testing.T) {
	_, leader := newCluster(t, 1, nil)
	for i := range 30 {
		if o := submitWait(t, leader.seq, fmt.Sprintf("a%d", i)); o.err != nil {
			t.Fatal(o.err)
		}
	}
	fresh := openNode(t, testConfig(t, "fresh"), newTestFSM())
	if got := fresh.seq.Suffrage(); got != "" {
		t.Fatalf("suffrage before the join: got %q, want none", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := leader.seq.AddNonvoter(ctx, fresh.id, fresh.seq.Addr()); err != nil {
		t.Fatal(err)
	}
	waitSameState(t, leader, fresh)
	if got := fresh.seq.Suffrage(); got != SuffrageLearner {
		t.Fatalf("suffrage of the learner: got %q, want %q", got, SuffrageLearner)
	}
	if v, _ := leader.seq.Servers(); len(v) != 1 {
		t.Fatalf("voters with a learner: %v, want the leader alone", v)
	}
	if err := leader.seq.AddVoter(ctx, fresh.id, fresh.seq.Addr()); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		if got := fresh.seq.Suffrage(); got != SuffrageVoter {
			return fmt.Errorf("suffrage after promotion: %q", got)
		}
		return nil
	})
	members, _ := leader.seq.Members()
	if len(members) != 2 || !members[0].Voter || !members[1].Voter {
		t.Fatalf("members after promotion: %+v", members)
	}
}

// askVote sends one RequestVote (or, with pre, one RequestPreVote), as a candidate with a
// log ending at lastIndex in term would, to the Raft transport at target, and returns
// whether it was granted.
func askVote(t *testing.T, target string, term, lastIndex uint64, pre bool) bool {
	t.Helper()
	trans, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer trans.Close()
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("candidate"), Addr: []byte(trans.LocalAddr())}
	if pre {
		var resp raft.RequestPreVoteResponse
		err = trans.RequestPreVote("target", raft.ServerAddress(target),
			&raft.RequestPreVoteRequest{RPCHeader: hdr, Term: term, LastLogIndex: lastIndex, LastLogTerm: 1}, &resp)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Granted
	}
	var resp raft.RequestVoteResponse
	err = trans.RequestVote("target", raft.ServerAddress(target),
		&raft.RequestVoteRequest{RPCHeader: hdr, Term: term, LastLogIndex: lastIndex, LastLogTerm: 1}, &resp)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Granted
}

// TestVoteGate: a node opened with HoldVotes, whose empty log would make it vote for any
// candidate (a wiped voter), refuses the votes and pre-votes of candidates with a history
// until AllowVotes; without the gate the same node grants them.
func TestVoteGate(t *testing.T) {
	for _, pre := range []bool{false, true} {
		for _, hold := range []bool{false, true} {
			cfg := testConfig(t, fmt.Sprintf("gate-%t-%t", pre, hold))
			cfg.HoldVotes = hold
			n := openNode(t, cfg, newTestFSM())
			if granted := askVote(t, n.seq.Addr(), 5, 1000, pre); granted == hold {
				t.Fatalf("pre-vote %t, HoldVotes %t: granted %t", pre, hold, granted)
			}
			if got, want := n.seq.VotesRefused() > 0, hold; got != want {
				t.Fatalf("pre-vote %t, HoldVotes %t: refused count %d", pre, hold, n.seq.VotesRefused())
			}
			if !hold {
				continue
			}
			if n.seq.Term() != 0 {
				t.Fatalf("pre-vote %t: a held vote reached Raft: term %d", pre, n.seq.Term())
			}
			// A candidate of a new cluster (its log at most a bootstrap configuration)
			// gets the vote, so that a cluster bootstrapped from one node elects a leader.
			if !askVote(t, n.seq.Addr(), 6, 1, pre) {
				t.Fatalf("pre-vote %t: vote for a new cluster's candidate not granted", pre)
			}
			n.seq.AllowVotes()
			if !askVote(t, n.seq.Addr(), 7, 1000, pre) {
				t.Fatalf("pre-vote %t: vote after AllowVotes not granted", pre)
			}
		}
	}
}

// flipIn flips one byte of the first occurrence of needle in the file at path.
func flipIn(t *testing.T, path string, needle []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, needle)
	if i < 0 {
		t.Fatalf("%q not found in %s", needle, path)
	}
	b[i+len(needle)/2] ^= 0x20
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLogChecksum, with each log store: one flipped byte in a stored log entry is
// ErrLogCorrupt on read, where the store alone returns the altered entry (raft-boltdb
// checksums only its meta pages; raft-wal checks a CRC only over the last batch of its
// tail segment, when it recovers the tail after a crash).
func TestLogChecksum(t *testing.T) {
	for _, kind := range []string{LogStoreBolt, LogStoreWAL} {
		t.Run(kind, func(t *testing.T) { testLogChecksum(t, kind) })
	}
}

func testLogChecksum(t *testing.T, kind string) {
	cfg := testConfig(t, "solo")
	solo(&cfg)
	cfg.LogStoreKind = kind
	n := openNode(t, cfg, newTestFSM())
	if err := n.seq.Bootstrap([]Server{{ID: n.id, Addr: n.seq.Addr()}}); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, []*node{n})
	for i := range 20 {
		submitWait(t, n.seq, fmt.Sprintf("payload-%03d-abcdefghijklmnop", i))
	}
	if err := n.seq.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := CheckDataDir(cfg.DataDir, false); err != nil || !st.HasState || st.LastIndex < 20 {
		t.Fatalf("intact data dir: %+v, %v", st, err)
	}
	needle := []byte("payload-007-abcdefghijklmnop")
	flipIn(t, fileHolding(t, cfg.DataDir, needle), needle)
	// The store alone reads the damaged entry back without complaint.
	store, closeStore, err := openLogStore(kind, cfg.DataDir, walOptions{segmentBytes: DefaultWALSegmentBytes}, newHclogAdapter(discardLogger(), "raft"))
	if err != nil {
		t.Fatal(err)
	}
	first, _ := store.FirstIndex()
	last, _ := store.LastIndex()
	for i := first; i <= last; i++ {
		var l raft.Log
		if err := store.GetLog(i, &l); err != nil {
			t.Fatalf("%s GetLog(%d): %v", kind, i, err)
		}
	}
	closeStore()
	if _, err := CheckDataDir(cfg.DataDir, false); !errors.Is(err, ErrLogCorrupt) {
		t.Fatalf("damaged entry: got %v, want ErrLogCorrupt", err)
	}
	if s, err := Open(cfg, newTestFSM()); !errors.Is(err, ErrLogCorrupt) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open on a damaged log: got %v, want ErrLogCorrupt", err)
	}
}

// fileHolding returns the one file under dir that holds needle.
func fileHolding(t *testing.T, dir string, needle []byte) string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, needle) {
			found = append(found, path)
		}
		return err
	})
	if err != nil || len(found) != 1 {
		t.Fatalf("files under %s holding %q: %v (%v)", dir, needle, found, err)
	}
	return found[0]
}

// TestLogChecksumLegacy: entries stored without a checksum (raft.db from before
// checksums) are ErrLogCorrupt for a strict store and accepted by a legacy one.
func TestLogChecksumLegacy(t *testing.T) {
	dir := t.TempDir()
	store, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.StoreLogs([]*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("old")}}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	if _, err := CheckDataDir(dir, false); !errors.Is(err, ErrLogCorrupt) {
		t.Fatalf("strict: got %v, want ErrLogCorrupt", err)
	}
	if st, err := CheckDataDir(dir, true); err != nil || st.LastIndex != 1 {
		t.Fatalf("legacy: %+v, %v", st, err)
	}
}

// TestSnapshotCorruptDetected: one flipped byte in a snapshot's state file, or damaged
// metadata, is ErrSnapshotCorrupt from CheckDataDir.
func TestSnapshotCorruptDetected(t *testing.T) {
	for _, target := range []string{"state.bin", "meta.json"} {
		t.Run(target, func(t *testing.T) {
			cfg, dir := soloSnapshot(t, "snapshot-abcdefghijkl-")
			if st, err := CheckDataDir(cfg.DataDir, false); err != nil || st.Snapshots != 1 {
				t.Fatalf("intact: %+v, %v", st, err)
			}
			needle := []byte("snapshot-abcdefghijkl-003")
			if target == "meta.json" {
				needle = []byte("{") // unparseable metadata
			}
			flipIn(t, filepath.Join(dir, target), needle)
			if _, err := CheckDataDir(cfg.DataDir, false); !errors.Is(err, ErrSnapshotCorrupt) {
				t.Fatalf("got %v, want ErrSnapshotCorrupt", err)
			}
			if s, err := Open(cfg, newTestFSM()); !errors.Is(err, ErrSnapshotCorrupt) {
				if err == nil {
					s.Close()
				}
				t.Fatalf("Open: got %v, want ErrSnapshotCorrupt", err)
			}
		})
	}
}

// TestSnapshotKilledBeforeReap: a node killed after a new snapshot was renamed into
// place but before the store reaped the oldest one (whole, or half removed) starts again:
// the leftover is older than both snapshots kept, the store never starts from it, and it
// is not corruption. Seen as a node of a jepsen pipeline run refusing to start ("snapshot
// corrupt ... metadata unreadable") after a kill at --snapshot-bytes 16KiB. A leftover
// that is not older than the kept ones stays ErrSnapshotCorrupt.
func TestSnapshotKilledBeforeReap(t *testing.T) {
	for _, leftover := range []string{"whole", "half-removed", "newer"} {
		t.Run(leftover, func(t *testing.T) {
			cfg := testConfig(t, "solo")
			solo(&cfg)
			n := openNode(t, cfg, newTestFSM())
			if err := n.seq.Bootstrap([]Server{{ID: n.id, Addr: n.seq.Addr()}}); err != nil {
				t.Fatal(err)
			}
			waitLeader(t, []*node{n})
			snapDir := filepath.Join(cfg.DataDir, "snapshots")
			var first string
			for i := range 3 {
				submitWait(t, n.seq, fmt.Sprintf("entry-%d", i))
				if err := n.seq.Snapshot(); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					dirs, _ := filepath.Glob(filepath.Join(snapDir, "*"))
					if len(dirs) != 1 {
						t.Fatalf("snapshots %v", dirs)
					}
					first = dirs[0]
					if err := os.CopyFS(first+".saved", os.DirFS(first)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := n.seq.Close(); err != nil {
				t.Fatal(err)
			}
			// The state a kill between rename and reap leaves: the reaped snapshot back.
			if _, err := os.Stat(first); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("oldest snapshot not reaped: %v", err)
			}
			back := first
			if leftover == "newer" {
				back = filepath.Join(snapDir, "99-999999-1")
			}
			if err := os.Rename(first+".saved", back); err != nil {
				t.Fatal(err)
			}
			if leftover != "whole" {
				if err := os.Remove(filepath.Join(back, "meta.json")); err != nil {
					t.Fatal(err)
				}
			}
			st, err := CheckDataDir(cfg.DataDir, false)
			if leftover == "newer" {
				if !errors.Is(err, ErrSnapshotCorrupt) {
					t.Fatalf("got %+v, %v, want ErrSnapshotCorrupt", st, err)
				}
				return
			}
			if err != nil || st.Snapshots != 2 {
				t.Fatalf("got %+v, %v, want 2 snapshots", st, err)
			}
			openNode(t, cfg, newTestFSM())
		})
	}
}

// TestCompactionByBytes: with an entry-count threshold that is never reached, entries of
// 16 KiB trigger snapshots by bytes and the log keeps about TrailingBytes of them; with
// the byte trigger off, the log is not compacted.
func TestCompactionByBytes(t *testing.T) {
	for _, kind := range []string{LogStoreBolt, LogStoreWAL} {
		for _, on := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/bytes=%t", kind, on), func(t *testing.T) { testCompactionByBytes(t, kind, on) })
		}
	}
}

func testCompactionByBytes(t *testing.T, kind string, on bool) {
	n := openSolo(t, "solo", func(c *Config) {
		c.LogStoreKind = kind
		c.SnapshotThreshold = 1 << 40
		c.SnapshotInterval = time.Hour
		c.SnapshotBytes, c.TrailingBytes = 256<<10, 64<<10
		c.WALSegmentBytes = 64 << 10 // raft-wal frees whole segments: small ones here
		if !on {
			c.SnapshotBytes = -1
		}
	})
	pad := strings.Repeat("x", 16<<10)
	for i := range 40 {
		submitWait(t, n.seq, fmt.Sprintf("%d-%s", i, pad))
	}
	first := func() uint64 { f, _ := n.seq.parts.logs.FirstIndex(); return f }
	if !on {
		if st := n.seq.Stats(); st.ByteSnapshots != 0 || first() > 1 {
			t.Fatalf("byte trigger off: %d snapshots by bytes, first index %d", st.ByteSnapshots, first())
		}
		return
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		st := n.seq.Stats()
		last, _ := n.seq.parts.logs.LastIndex()
		if st.ByteSnapshots == 0 {
			return fmt.Errorf("no snapshot by bytes yet; %d bytes since the last", st.BytesSinceSnapshot)
		}
		// 64 KiB of 16 KiB entries: about 4 kept (plus what came after the snapshot).
		if kept := last - first() + 1; kept > 20 {
			return fmt.Errorf("%d entries kept (first %d, last %d)", kept, first(), last)
		}
		if kind == LogStoreWAL {
			// And the segments of the compacted entries are gone from the disk: at most
			// the 256 KiB since the snapshot, the 64 KiB kept, and two partial segments.
			segs, _ := filepath.Glob(filepath.Join(n.cfg.DataDir, walDir, "*.wal"))
			if len(segs) > (256+64)/64+2 {
				return fmt.Errorf("%d raft-wal segments of 64 KiB on disk for 640 KiB written", len(segs))
			}
		}
		return nil
	})
}

// TestRecover: a cluster of three loses two nodes for good; Recover rewrites the
// survivor's configuration to itself alone, and the survivor restarts as a one-node
// cluster with every committed entry, and takes new ones.
func TestRecover(t *testing.T) {
	for _, kind := range []string{LogStoreBolt, LogStoreWAL} {
		t.Run(kind, func(t *testing.T) { testRecover(t, kind) })
	}
}

func testRecover(t *testing.T, kind string) {
	nodes, leader := newCluster(t, 3, func(c *Config) { c.LogStoreKind = kind })
	for i := range 25 {
		if o := submitWait(t, leader.seq, fmt.Sprintf("r%d", i)); o.err != nil {
			t.Fatal(o.err)
		}
	}
	if err := leader.seq.Snapshot(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		submitWait(t, leader.seq, fmt.Sprintf("after-snapshot-%d", i))
	}
	waitSameState(t, leader, nodes...)
	survivor := nodes[0]
	want := survivor.fsm.state()
	for _, nd := range nodes {
		if err := nd.seq.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cfg := survivor.cfg
	if err := Recover(cfg, newTestFSM(), []Server{{ID: "other", Addr: "127.0.0.1:1"}}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("members without the node itself: got %v, want ErrBadConfig", err)
	}
	if err := Recover(cfg, newTestFSM(), []Server{{ID: survivor.id, Addr: "127.0.0.1:1"}}); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	solo(&cfg)
	cfg.RaftAddr = "127.0.0.1:0"
	back := openNode(t, cfg, newTestFSM())
	waitLeader(t, []*node{back})
	if got := back.fsm.state(); got.Count != want.Count || got.Hash != want.Hash {
		t.Fatalf("recovered state %+v, want %+v", got, want)
	}
	if o := submitWait(t, back.seq, "after-recovery"); o.err != nil {
		t.Fatal(o.err)
	}
}

// TestRecoverRefusals: Recover refuses, changing nothing, an empty member list, a member
// without an address, a data directory without a log, and the data directory of a node
// that is still running (with each log store).
func TestRecoverRefusals(t *testing.T) {
	empty := testConfig(t, "n1")
	tests := []struct {
		name    string
		members []Server
		want    error
	}{
		{"no members", nil, ErrBadConfig},
		{"member without an address", []Server{{ID: "n1"}}, ErrBadConfig},
		{"no log store", []Server{{ID: "n1", Addr: "127.0.0.1:1"}}, ErrBadConfig},
	}
	for i, tt := range tests {
		if err := Recover(empty, newTestFSM(), tt.members); !errors.Is(err, tt.want) {
			t.Errorf("#%d %s: got %v, want %v", i, tt.name, err, tt.want)
		}
	}
	if ents, err := os.ReadDir(empty.DataDir); err != nil || len(ents) != 0 {
		t.Errorf("a refused Recover wrote to the data dir: %v, %v", ents, err)
	}
	for _, kind := range []string{LogStoreBolt, LogStoreWAL} {
		running := openSolo(t, "solo-"+kind, func(c *Config) { c.LogStoreKind = kind })
		err := Recover(running.cfg, newTestFSM(), []Server{{ID: running.id, Addr: running.seq.Addr()}})
		if !errors.Is(err, ErrDataDirLocked) {
			t.Errorf("%s: running node: got %v, want ErrDataDirLocked", kind, err)
		}
		if o := submitWait(t, running.seq, "still serving"); o.err != nil {
			t.Errorf("%s: the node after a refused Recover: %v", kind, o.err)
		}
	}
}

// TestPromoteLeavesARemovedLearnerOut: a promotion decided while the node was a learner
// does nothing once it has been removed (AddVoter would add it back as a voter), and
// nothing for a voter; it promotes a learner.
func TestPromoteLeavesARemovedLearnerOut(t *testing.T) {
	_, leader := newCluster(t, 1, nil)
	fresh := openNode(t, testConfig(t, "fresh"), newTestFSM())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := leader.seq.AddNonvoter(ctx, fresh.id, fresh.seq.Addr()); err != nil {
		t.Fatal(err)
	}
	if err := leader.seq.RemoveServer(ctx, fresh.id); err != nil {
		t.Fatal(err)
	}
	if err := leader.seq.Promote(ctx, fresh.id, fresh.seq.Addr()); !errors.Is(err, ErrUnknownServer) {
		t.Fatalf("promoting a removed learner: got %v, want ErrUnknownServer", err)
	}
	if members, _ := leader.seq.Members(); len(members) != 1 {
		t.Fatalf("members after the refused promotion: %+v, want the leader alone", members)
	}
	if err := leader.seq.Promote(ctx, "", fresh.seq.Addr()); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("promotion without an id: got %v, want ErrBadConfig", err)
	}
	if err := leader.seq.AddNonvoter(ctx, fresh.id, fresh.seq.Addr()); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second time it is a voter already
		if err := leader.seq.Promote(ctx, fresh.id, fresh.seq.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := leader.seq.Servers(); len(v) != 2 {
		t.Fatalf("voters after the promotion: %v", v)
	}
}
