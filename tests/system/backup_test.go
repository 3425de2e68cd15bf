package system

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/backup"
	"github.com/lockstepdb/lockstep/internal/certs"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
)

// Backup and restore (issue 26 item 1) with real processes: `lockstep backup` of a
// 3-node cluster under a write load, `lockstep restore` into the data directories of a
// new 3-node cluster, which starts with the source's state at the backup's index.

// backupLoad adds to one counter per worker until stopped. sent counts the adds begun,
// acked those acknowledged: a counter's value is between the two.
type backupLoad struct {
	sent, acked []atomic.Int64
	stop        atomic.Bool
	wg          sync.WaitGroup
}

func startBackupLoad(ctx context.Context, cl *client.Client, workers int) *backupLoad {
	l := &backupLoad{sent: make([]atomic.Int64, workers), acked: make([]atomic.Int64, workers)}
	for w := range workers {
		l.wg.Go(func() {
			for !l.stop.Load() && ctx.Err() == nil {
				l.sent[w].Add(1)
				if _, err := cl.CounterAdd(ctx, fmt.Sprintf("bk%d", w), 1); err == nil {
					l.acked[w].Add(1)
				}
			}
		})
	}
	return l
}

func (l *backupLoad) halt() { l.stop.Store(true); l.wg.Wait() }

func counts(c []atomic.Int64) []int64 {
	out := make([]int64, len(c))
	for i := range c {
		out[i] = c[i].Load()
	}
	return out
}

// TestBackupRestoreUnderLoad: a backup taken while writes go on holds the state at one
// log index (every counter between what was acknowledged before the backup began and
// what was sent by the time it ended); a writer may not take one; a truncated file and a
// file with one flipped byte are refused by the checksum and leave the target empty; the
// three restored data directories start a new cluster — its own id, its own members —
// whose state hashes equal the source's at the backup's index, with the source's data,
// users and sessions, that takes writes.
func TestBackupRestoreUnderLoad(t *testing.T) {
	began := time.Now()
	bin := proctest.BuildBinary(t)
	src := proctest.StartCluster(t, bin, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tmp := t.TempDir()

	// wendy, a writer, with a certificate of the cluster's CA.
	certsDir := filepath.Join(tmp, "certs")
	os.MkdirAll(certsDir, 0o700)
	for _, f := range []string{"ca.crt", "ca.key"} {
		b, err := os.ReadFile(filepath.Join(testutil.CertsDir(t), f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(certsDir, f), b, 0o600)
	}
	if err := certs.CreateClient(certsDir, "wendy", certs.Options{}); err != nil {
		t.Fatal(err)
	}
	proctest.MustRun(t, bin, "user", "add", "wendy", "--role", "writer", "--addr", src.AddrFlag())

	srcAddrs := strings.Split(src.AddrFlag(), ",")
	cl, err := client.Dial(ctx, client.Config{Addrs: srcAddrs, MaxRetries: -1, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	load := startBackupLoad(ctx, cl, 4)
	defer load.halt()
	testutil.WaitFor(t, 60*time.Second, func() error {
		if n := slices.Min(counts(load.acked)); n < 50 {
			return fmt.Errorf("%d adds acknowledged on the slowest worker", n)
		}
		return nil
	})

	// A writer may not take a backup, by the CLI or the Go client.
	denied := filepath.Join(tmp, "denied.lsb")
	r := proctest.Run(t, bin, "backup", "--out", denied, "--addr", src.AddrFlag(), "--certs-dir", certsDir, "--user", "wendy")
	if r.Code == 0 || !strings.Contains(r.Stderr, "needs admin") {
		t.Errorf("backup as writer wendy: want a refusal naming the admin role, got %v", r)
	}
	if _, err := os.Stat(denied); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused backup left %s: %v", denied, err)
	}
	if _, err := os.Stat(denied + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused backup left %s.tmp: %v", denied, err)
	}
	wendyTLS, err := client.LoadTLS(certsDir, "wendy")
	if err != nil {
		t.Fatal(err)
	}
	wendy, err := client.Open(client.Config{Addrs: srcAddrs, TLS: wendyTLS})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wendy.Cluster().Backup(ctx, "", io.Discard); !errors.Is(err, client.ErrPermissionDenied) {
		t.Errorf("Cluster.Backup as writer wendy: got %v, want ErrPermissionDenied", err)
	}
	wendy.Close()

	// The backup, under the load.
	file := filepath.Join(tmp, "src.lsb")
	ackedBefore := counts(load.acked)
	took := time.Now()
	r = proctest.MustRun(t, bin, "backup", "--out", file, "--addr", src.AddrFlag())
	took2 := time.Since(took)
	sentAfter := counts(load.sent)
	ackedAfter := counts(load.acked)
	h, err := backup.Verify(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("backup at index %d of cluster %s (version %d) from %s, %d bytes, in %v: %s", h.Index, h.ClusterID,
		h.ClusterVersion, h.Node, h.Size, took2, strings.TrimSpace(r.Stdout))
	if !strings.Contains(r.Stdout, fmt.Sprintf("at index %d", h.Index)) || h.Node != "n1" || h.ClusterVersion == 0 || len(h.Hashes) != 4 {
		t.Errorf("backup: header %+v, output %q", h, r.Stdout)
	}
	sum := func(v []int64) (n int64) {
		for _, x := range v {
			n += x
		}
		return n
	}
	if sum(ackedAfter) == sum(ackedBefore) { // writes go on while a backup is taken
		t.Errorf("no add was acknowledged while the backup was taken: %v before, %v after", ackedBefore, ackedAfter)
	}
	load.halt()

	// The header's hashes are the source's: with the writes stopped and the source's
	// nodes at the same partition hashes, a second backup, from another node, records them.
	var quietHashes []uint64
	testutil.WaitFor(t, 30*time.Second, func() error {
		quietHashes = nil
		for _, n := range src.Procs {
			st, err := cl.Status(ctx, n.Client)
			if err != nil {
				return err
			}
			if quietHashes != nil && !slices.Equal(st.Hashes, quietHashes) {
				return fmt.Errorf("source %s at %d: hashes %x, another node %x", n.ID, st.AppliedIndex, st.Hashes, quietHashes)
			}
			quietHashes = st.Hashes
		}
		return nil
	})
	quiet := filepath.Join(tmp, "quiet.lsb")
	proctest.MustRun(t, bin, "backup", "--out", quiet, "--addr", src.Procs[1].Client)
	hq, err := backup.Verify(quiet)
	if err != nil {
		t.Fatal(err)
	}
	if hq.Node != "n2" || hq.Index <= h.Index || !slices.Equal(hq.Hashes, quietHashes) || slices.Equal(hq.Hashes, h.Hashes) {
		t.Errorf("second backup: node %s, index %d after %d, hashes %x; want the source's %x (not the first backup's %x)",
			hq.Node, hq.Index, h.Index, hq.Hashes, quietHashes, h.Hashes)
	}

	// The new cluster's nodes: members with new addresses.
	addrs := testutil.FreeAddrs(t, 9)
	var members []string
	for i := range 3 {
		members = append(members, fmt.Sprintf("n%d=%s=%s", i+1, addrs[3*i], addrs[3*i+1]))
	}
	membersFlag := strings.Join(members, ",")
	dataDir := func(i int) string { return filepath.Join(tmp, fmt.Sprintf("restored-n%d", i+1)) }
	restoreArgs := func(f string, i int) []string {
		return []string{"restore", f, "--id", fmt.Sprintf("n%d", i+1), "--data-dir", dataDir(i), "--cluster-id", "restored", "--members", membersFlag}
	}

	// A truncated file and one with a flipped byte are refused by the checksum, and the
	// target stays empty.
	good, _ := os.ReadFile(file)
	flipped := bytes.Clone(good)
	flipped[len(flipped)-len(flipped)/3] ^= 0x10
	for i, tt := range []struct {
		content []byte
		want    string
	}{
		{good[:len(good)/2], "truncated"},
		{good[:len(good)-1], "truncated"},
		{flipped, "checksum mismatch"},
	} {
		bad := filepath.Join(tmp, fmt.Sprintf("bad%d.lsb", i))
		os.WriteFile(bad, tt.content, 0o600)
		r := proctest.Run(t, bin, restoreArgs(bad, 0)...)
		if r.Code == 0 || !strings.Contains(r.Stderr, tt.want) || !strings.Contains(r.Stderr, "bad backup file") {
			t.Errorf("#%d: restore of a damaged file: want a refusal saying %q, got %v", i, tt.want, r)
		}
		if ents, _ := os.ReadDir(dataDir(0)); len(ents) > 0 {
			t.Fatalf("#%d: a refused restore wrote %d entries into %s", i, len(ents), dataDir(0))
		}
	}
	// Without a new cluster id, or into a directory in use, nothing is written either.
	r = proctest.Run(t, bin, "restore", file, "--id", "n1", "--data-dir", dataDir(0), "--members", membersFlag)
	if r.Code == 0 || !strings.Contains(r.Stderr, "new cluster id") {
		t.Errorf("restore without --cluster-id: want a refusal, got %v", r)
	}
	r = proctest.Run(t, bin, "restore", file, "--id", "n1", "--data-dir", src.Procs[0].Data, "--cluster-id", "restored", "--members", membersFlag)
	if r.Code == 0 || !strings.Contains(r.Stderr, "not empty") {
		t.Errorf("restore into a node's data directory: want a refusal, got %v", r)
	}

	// Restore, and start the new cluster as after a restart.
	var nodes []*proctest.Node
	var restored []string
	for i := range 3 {
		proctest.MustRun(t, bin, restoreArgs(file, i)...)
		id := fmt.Sprintf("n%d", i+1)
		n := proctest.SpawnNode(t, bin, id, "--id", id, "--data", dataDir(i), "--cluster-id", "restored",
			"--raft", addrs[3*i], "--client", addrs[3*i+1], "--admin", addrs[3*i+2], "--partitions", "4", "--log-level", "warn")
		nodes = append(nodes, n)
		restored = append(restored, addrs[3*i+1])
	}
	for i, n := range nodes {
		if err := n.WaitReady(addrs[3*i+2], proctest.ReadyTimeout); err != nil {
			t.Fatalf("restored %s: %v", n.ID, err)
		}
	}
	rcl, err := client.Open(client.Config{Addrs: restored, ClusterID: "restored", MaxRetries: -1, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer rcl.Close()

	// Before any write: every restored node's partition hashes are the source's at the
	// backup's index (DESIGN.md invariant 1: the same state, from the same log prefix),
	// and it holds the source's sessions (the load's, at least; rcl has none yet).
	for _, a := range restored {
		st, err := rcl.Status(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if st.AppliedIndex < h.Index || !slices.Equal(st.Hashes, h.Hashes) || st.ClusterID != "restored" || st.Sessions < 1 {
			t.Errorf("restored %s: applied %d, hashes %x, cluster %q, %d sessions; want from index %d the source's %x, cluster restored, sessions",
				st.NodeID, st.AppliedIndex, st.Hashes, st.ClusterID, st.Sessions, h.Index, h.Hashes)
		}
	}
	// The members are the new nodes.
	ms, err := rcl.Cluster().Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if !slices.Contains(restored, m.ClientAddr) {
			t.Errorf("restored member %s at %s, not one of the new nodes %v", m.ID, m.ClientAddr, restored)
		}
	}
	if len(ms) != 3 {
		t.Errorf("restored cluster has %d members, want 3: %+v", len(ms), ms)
	}
	// The data: one cut of the log, between what was acknowledged before the backup and
	// what was sent by its end; users too.
	for w := range ackedBefore {
		got, err := rcl.CounterGet(ctx, fmt.Sprintf("bk%d", w))
		if err != nil {
			t.Fatal(err)
		}
		if got < ackedBefore[w] || got > sentAfter[w] {
			t.Errorf("#%d: restored counter %d, want between %d (acknowledged before the backup) and %d (sent by its end)",
				w, got, ackedBefore[w], sentAfter[w])
		}
	}
	users, err := rcl.Users().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(users, func(u client.User) bool { return u.Name == "wendy" && u.Role == client.RoleWriter }) {
		t.Errorf("restored users %+v lack writer wendy", users)
	}
	// Writes, on every node's state alike.
	v, err := rcl.CounterGet(ctx, "bk0")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rcl.CounterAdd(ctx, "bk0", 5); err != nil || got != v+5 {
		t.Fatalf("counter.add on the restored cluster: got %d, %v; want %d", got, err, v+5)
	}
	if _, err := rcl.KVPut(ctx, []byte("after-restore"), []byte("yes")); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, func() error {
		var first client.Status
		for i, a := range restored {
			st, err := rcl.Status(ctx, a)
			if err != nil {
				return err
			}
			if i == 0 {
				first = st
			} else if st.AppliedIndex != first.AppliedIndex || !slices.Equal(st.Hashes, first.Hashes) {
				return fmt.Errorf("%s at %d %x, %s at %d %x", first.NodeID, first.AppliedIndex, first.Hashes, st.NodeID, st.AppliedIndex, st.Hashes)
			}
		}
		if slices.Equal(first.Hashes, h.Hashes) {
			return fmt.Errorf("the writes changed no hash")
		}
		return nil
	})
	// The source's clients do not reach the new cluster by mistake.
	old, err := client.Open(client.Config{Addrs: restored[:1], ClusterID: h.ClusterID, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if _, err := old.Status(ctx, restored[0]); !errors.Is(err, client.ErrClusterMismatch) {
		t.Errorf("a client of cluster %s at the restored cluster: got %v, want ErrClusterMismatch", h.ClusterID, err)
	}
	t.Logf("the whole test took %v", time.Since(began))
}
