package system

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
)

// Damaged data directories with real processes (issue 13, "one flipped byte in a log or
// snapshot file → detected on read, the node refuses to serve from it"). The log case is
// in TestWipedDataDirRefused.

// damageTimeout bounds a start of a node on a damaged directory: it must refuse at once;
// one that serves instead is killed when it passes.
const damageTimeout = 30 * time.Second

// copyDir copies the directory src to dst (which must not exist), as cp -a does.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v: %s", src, dst, err, out)
	}
}

// flipByte flips the low bit of the byte at offset i of the file at path (a digit stays a
// digit: 0↔1, 2↔3, ...).
func flipByte(t *testing.T, path string, i int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if i < 0 || i >= len(b) {
		t.Fatalf("offset %d outside %s (%d bytes)", i, path, len(b))
	}
	b[i] ^= 0x01
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// checkNodeRefused checks that a `lockstep node` run r refused to start: a non-zero exit
// and, after whatever the node logged, the one-line error "lockstep: ..." containing want.
func checkNodeRefused(t *testing.T, r proctest.Result, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if r.Code <= 0 || !strings.HasPrefix(last, "lockstep: ") || !strings.Contains(last, want) {
		t.Fatalf("want a refusal to start, ending in a stderr line with %q; got %v", want, r)
	}
}

// TestFlippedSnapshotByteRefused: a follower that has taken a compaction snapshot is
// stopped; a copy of its data directory with one flipped byte in the snapshot's state
// file, or in a field of its metadata (the log index it stands for, its term, the size of
// the state), makes `lockstep node` refuse to start with the documented message
// (docs/operations.md, "Wiped or damaged data directory"), where it would otherwise
// replay from a wrong snapshot. The intact directory starts, and the node rejoins with the
// others' state.
func TestFlippedSnapshotByteRefused(t *testing.T) {
	bin := proctest.BuildBinary(t)
	c := proctest.StartClusterWith(t, bin, 3, "--snapshot-threshold", "16", "--trailing-logs", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, client.Config{Addrs: strings.Split(c.AddrFlag(), ","), MaxRetries: -1, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	leader := proctest.LeaderNode(t, bin, c)
	var victim *proctest.Node
	for _, n := range c.Procs {
		if n != leader {
			victim = n
			break
		}
	}
	// Raft takes a snapshot within its snapshot interval (10–20 s) once 16 entries follow
	// the last one; writes go on until the victim has one.
	snapshot := func() string { // the newest complete snapshot's directory
		m, _ := filepath.Glob(filepath.Join(victim.Data, "snapshots", "*", "meta.json"))
		m = slices.DeleteFunc(m, func(p string) bool { return strings.HasSuffix(filepath.Dir(p), ".tmp") })
		if len(m) == 0 {
			return ""
		}
		return filepath.Dir(slices.Max(m))
	}
	i := 0
	testutil.WaitFor(t, 90*time.Second, func() error {
		for range 20 {
			if _, err := cl.CounterAdd(ctx, fmt.Sprintf("snap-%d", i%7), 1); err != nil {
				return err
			}
			i++
		}
		if snapshot() == "" {
			return fmt.Errorf("%s has no snapshot after %d adds", victim.ID, i)
		}
		return nil
	})
	victim.Stop(10 * time.Second)
	snapDir := snapshot()
	state := filepath.Join(snapDir, "state.bin")
	meta, err := os.ReadFile(filepath.Join(snapDir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(state)
	if err != nil {
		t.Fatal(err)
	}
	// metaField returns the offset of the last digit of the JSON number field name.
	metaField := func(name string) int {
		loc := regexp.MustCompile(`"` + name + `":\s*(\d+)`).FindSubmatchIndex(meta)
		if loc == nil {
			t.Fatalf("no %s in meta.json: %s", name, meta)
		}
		return loc[3] - 1
	}
	for _, tc := range []struct {
		name string
		file string
		at   int
		want string
	}{
		{"state", "state.bin", int(st.Size() / 2), "snapshot corrupt"},
		{"meta-index", "meta.json", metaField("Index"), "snapshot corrupt"},
		{"meta-term", "meta.json", metaField("Term"), "snapshot corrupt"},
		{"meta-size", "meta.json", metaField("Size"), "snapshot corrupt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			copyDir(t, victim.Data, data)
			rel, _ := filepath.Rel(victim.Data, snapDir)
			flipByte(t, filepath.Join(data, rel, tc.file), tc.at)
			r := proctest.RunWithin(t, damageTimeout, bin, "node", "--id", victim.ID, "--data", data, "--raft", victim.Raft,
				"--client", victim.Client, "--admin", victim.Admin, "--partitions", "4", "--log-level", "warn")
			checkNodeRefused(t, r, "data directory damaged")
			t.Log(strings.TrimSpace(r.Stderr[strings.LastIndex(strings.TrimRight(r.Stderr, "\n"), "\n")+1:]))
			for _, want := range []string{tc.want, "This node must not serve from it", "lockstep cluster remove " + victim.ID} {
				if !strings.Contains(r.Stderr, want) {
					t.Fatalf("the refusal does not say %q: %v", want, r)
				}
			}
		})
	}
	// The intact directory is served from: the refusals were the flipped bytes'.
	back := proctest.SpawnNode(t, bin, victim.ID+"-intact", victim.Args...)
	back.Raft, back.Client, back.Admin, back.Data = victim.Raft, victim.Client, victim.Admin, victim.Data
	if err := back.WaitReady(back.Admin, proctest.ReadyTimeout); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CounterAdd(ctx, "after", 1); err != nil {
		t.Fatal(err)
	}
	proctest.WaitConvergedVoters(t, bin, c.AddrFlag(), []string{"n1", "n2", "n3"})
	if bytes.Contains(back.Log(), []byte("snapshot corrupt")) {
		t.Fatalf("the intact directory was reported damaged:\n%s", back.Log())
	}
}
