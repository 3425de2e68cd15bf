package jepsen

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
)

// startTestCluster starts n nodes of testBin in a temp dir, closed when the test ends.
func startTestCluster(t *testing.T, n int) *Cluster {
	t.Helper()
	c, err := StartCluster(context.Background(), ClusterConfig{Bin: testBin, Nodes: n, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// waitLeader waits until the cluster names a leader and returns its index.
func waitLeader(t *testing.T, c *Cluster, cl *client.Client) int {
	t.Helper()
	leader := -1
	testutil.WaitFor(t, 30*time.Second, func() error {
		if leader = c.Leader(context.Background(), cl); leader < 0 {
			return fmt.Errorf("no leader")
		}
		return nil
	})
	return leader
}

// put writes key=val and fails the test on error.
func put(t *testing.T, cl *client.Client, key, val string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cl.KVPut(ctx, []byte(key), []byte(val)); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// TestClusterControl drives every cluster-control move on three real node processes —
// kill -9 and restart, pause and resume, isolating the leader through the link proxies,
// wiping and replacing a node, killing all and restarting — and checks after each that
// the cluster takes writes, and at the end that the replicas are identical.
func TestClusterControl(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real node processes")
	}
	c := startTestCluster(t, 3)
	ctx := context.Background()
	// The control client retries until put's deadline: after a fault, the cluster must
	// take writes within that time, however many elections and catch-ups it takes (a new
	// leader refuses writes until it has applied its predecessors' entries, which takes
	// seconds on a loaded machine and used up a bounded retry count).
	cl, err := c.dialClient(ctx, nil, func(cfg *client.Config) { cfg.MaxRetries = -1 })
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	put(t, cl, "k", "0")

	leader := waitLeader(t, c, cl)
	c.Kill(leader)
	put(t, cl, "k", "1")
	if err := c.Restart(ctx, leader); err != nil {
		t.Fatal(err)
	}

	leader = waitLeader(t, c, cl)
	if err := c.Pause(leader); err != nil {
		t.Fatal(err)
	}
	put(t, cl, "k", "2")
	if err := c.Resume(leader); err != nil {
		t.Fatal(err)
	}

	// Isolate the leader: the others elect a new one.
	isolateLeader(t, c, cl)
	put(t, cl, "k", "3")
	if err := c.Net.Heal(); err != nil {
		t.Fatal(err)
	}

	// Replace a follower with an empty one.
	leader = waitLeader(t, c, cl)
	victim := (leader + 1) % len(c.Nodes)
	if err := c.Replace(ctx, victim); err != nil {
		t.Fatal(err)
	}
	put(t, cl, "k", "4")

	c.KillAll()
	if err := c.RestartAll(ctx); err != nil {
		t.Fatal(err)
	}
	put(t, cl, "k", "5")
	if err := WaitConverged(ctx, cl, c, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if u := c.Unexpected(); len(u) > 0 {
		t.Fatalf("unexpected exits: %v", u)
	}
}

// isolateLeader cuts the leader off from the other nodes, waits until they elect a new
// one, and returns the old leader's index.
func isolateLeader(t *testing.T, c *Cluster, cl *client.Client) int {
	t.Helper()
	old := waitLeader(t, c, cl)
	rest := others(len(c.Nodes), old)
	if err := c.Net.Cut(partitionCuts([][]int{{old}, rest})...); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, func() error {
		st, err := cl.Status(context.Background(), c.Nodes[rest[0]].Client)
		if err != nil {
			return err
		}
		if st.LeaderID == "" || st.LeaderID == c.Nodes[old].ID {
			return fmt.Errorf("leader %q", st.LeaderID)
		}
		return nil
	})
	return old
}

// procUID returns the real uid of process pid.
func procUID(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			uid, err := strconv.Atoi(strings.Fields(rest)[0])
			if err != nil {
				t.Fatal(err)
			}
			return uid
		}
	}
	t.Fatalf("no Uid line in /proc/%d/status", pid)
	return -1
}

// TestClusterIPTables: on the iptables backend every node process runs as its own
// unprivileged uid from a private folder; isolating the leader with the run's chain makes
// the others elect a new one and take writes; killing and restarting a node keeps its
// uid; Close removes the chain and the private folder.
func TestClusterIPTables(t *testing.T) {
	t.Parallel()
	needIPTables(t)
	if testing.Short() {
		t.Skip("real node processes")
	}
	ctx := context.Background()
	c, err := StartCluster(ctx, ClusterConfig{Bin: testBin, Nodes: 3, Dir: t.TempDir(), Net: NetIPTables})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			c.Close()
		}
	})
	ipt, ok := c.Net.(*IPTablesNet)
	if !ok {
		t.Fatalf("network %T, want *IPTablesNet", c.Net)
	}
	for i, n := range c.Nodes {
		if got := procUID(t, n.proc.Pid()); got != nodeUID(i) {
			t.Errorf("#%d: %s runs as uid %d, want %d", i, n.ID, got, nodeUID(i))
		}
	}
	cl, err := c.dialClient(ctx, nil, func(cfg *client.Config) { cfg.MaxRetries = -1 })
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	put(t, cl, "k", "0")
	old := isolateLeader(t, c, cl)
	put(t, cl, "k", "1")
	if err := c.Net.Heal(); err != nil {
		t.Fatal(err)
	}
	c.Kill(old)
	if err := c.Restart(ctx, old); err != nil {
		t.Fatal(err)
	}
	if got := procUID(t, c.Nodes[old].proc.Pid()); got != nodeUID(old) {
		t.Errorf("restarted %s runs as uid %d, want %d", c.Nodes[old].ID, got, nodeUID(old))
	}
	put(t, cl, "k", "2")
	if err := WaitConverged(ctx, cl, c, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	private := c.PrivateDir()
	closed = true
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	names, err := harnessChains()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, ipt.Chain()) {
		t.Errorf("chain %s left after Close", ipt.Chain())
	}
	if _, err := os.Stat(private); !os.IsNotExist(err) {
		t.Errorf("private folder %s left after Close (%v)", private, err)
	}
}

// TestCloseKeepData: Close removes the private folder of the iptables backend, or with
// KeepData only the copy of the binary in it.
func TestCloseKeepData(t *testing.T) {
	for _, keep := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "private")
		if err := os.MkdirAll(filepath.Join(dir, "n1", "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, "lockstep")
		if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
			t.Fatal(err)
		}
		c := &Cluster{cfg: ClusterConfig{KeepData: keep}, private: dir, bin: bin}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		_, binErr := os.Stat(bin)
		_, dataErr := os.Stat(filepath.Join(dir, "n1", "data"))
		if !os.IsNotExist(binErr) || os.IsNotExist(dataErr) == keep {
			t.Errorf("KeepData %t: binary %v, data %v", keep, binErr, dataErr)
		}
	}
}
