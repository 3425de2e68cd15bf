package system

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
)

// Replica lifecycle with real processes (issue 13): joins as learners, replacement of a
// lost node, recovery from lost quorum, wiped and damaged data directories.

// statusAnyHealth is `cluster status --output json`, whatever the cluster's health.
func statusAnyHealth(t *testing.T, bin, addrs string) clusterStatusJSON {
	t.Helper()
	return proctest.StatusAnyHealth[clusterStatusJSON](t, bin, addrs)
}

// joinNode starts a fresh node process that joins the cluster at seeds.
func joinNode(t *testing.T, bin, id, seeds string) *proctest.Node {
	t.Helper()
	a := testutil.FreeAddrs(t, 3)
	data := filepath.Join(t.TempDir(), id)
	n := proctest.SpawnNode(t, bin, id, "--id", id, "--data", data, "--raft", a[0], "--client", a[1], "--admin", a[2],
		"--partitions", "4", "--join", seeds, "--log-level", "warn")
	n.Raft, n.Client, n.Admin, n.Data = a[0], a[1], a[2], data
	return n
}

// watchLearner polls node n's status until it is a voter, and fails the test if it is
// ever ready before (a learner serves nothing) or never seen as a learner.
func watchLearner(t *testing.T, ctx context.Context, n *proctest.Node) {
	t.Helper()
	cl, err := client.Open(client.Config{Addrs: []string{n.Client}, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sawLearner := false
	testutil.WaitFor(t, 90*time.Second, func() error {
		st, err := cl.Status(ctx, n.Client)
		if err != nil {
			return err
		}
		if st.Suffrage != "voter" {
			if st.Ready {
				t.Fatalf("%s ready while %q: %+v", n.ID, st.Suffrage, st)
			}
			sawLearner = sawLearner || st.Suffrage == "learner"
			return fmt.Errorf("%s: %q, %s", n.ID, st.Suffrage, st.NotReadyReason)
		}
		return nil
	})
	if !sawLearner {
		t.Logf("%s was promoted before a poll saw it as a learner", n.ID)
	}
}

// TestGhostJoinsHarmless is the scenario of issue 13: three "cluster join" calls naming
// addresses where nothing listens used to make a 3-node cluster a 6-voter cluster with 3
// alive, leaderless for good. They now add three learners that never count towards the
// quorum: the cluster keeps accepting writes, with 3 voters, and the leader reports the
// ghosts as unreachable learners.
func TestGhostJoinsHarmless(t *testing.T) {
	bin, c, ctx, load := proctest.LoadedCluster(t, 3*time.Minute, "g", 8, 200)
	// Joins of addresses where nothing answers are refused before any change to the
	// membership (node/reachable.go); were they admitted, they would be learners only.
	ghosts := testutil.FreeAddrs(t, 6)
	for i := range 3 {
		r := proctest.Run(t, bin, "cluster", "join", "--addr", c.AddrFlag(), "--id", fmt.Sprintf("ghost%d", i),
			"--raft", ghosts[2*i], "--client", ghosts[2*i+1])
		proctest.CheckFailure(t, r, "does not answer")
	}
	load.WaitAcked(t, 500)
	// A node failure on top: the 3 real voters still hold a quorum.
	var follower *proctest.Node
	leader := proctest.LeaderNode(t, bin, c)
	for _, n := range c.Procs {
		if n != leader {
			follower = n
			break
		}
	}
	follower.Kill()
	load.WaitAcked(t, 300)
	load.Halt()
	load.Check(t, ctx, load.Client)

	cs := statusAnyHealth(t, bin, c.AddrFlag())
	for _, n := range cs.Nodes {
		if strings.HasPrefix(n.NodeID, "ghost") || len(n.Learners) > 0 {
			t.Fatalf("a ghost join left a trace: %+v", n)
		}
	}
}

// TestReplaceLostNodeUnderLoad: a follower is lost (SIGKILL), removed with "cluster
// remove", and a fresh node joins with --join: it is a learner, never ready before its
// promotion, and becomes a voter with the others' state hashes. No acknowledged input is
// lost, and acknowledgements never stop for longer than an election.
func TestReplaceLostNodeUnderLoad(t *testing.T) {
	bin, c, ctx, load := proctest.LoadedCluster(t, 3*time.Minute, "r", 8, 300)
	leader := proctest.LeaderNode(t, bin, c)
	var lost *proctest.Node
	var alive []*proctest.Node
	for _, n := range c.Procs {
		if n != leader && lost == nil {
			lost = n
		} else {
			alive = append(alive, n)
		}
	}
	lost.Kill()
	load.WaitAcked(t, 200)
	proctest.MustRun(t, bin, "cluster", "remove", lost.ID, "--addr", c.AddrFlag())
	var seeds []string
	for _, n := range alive {
		seeds = append(seeds, n.Client)
	}
	fresh := joinNode(t, bin, "n4", strings.Join(seeds, ","))
	watchLearner(t, ctx, fresh)
	load.WaitAcked(t, 300)
	load.Halt()
	load.Check(t, ctx, load.Client)
	all := append(alive, fresh)
	var addrs, ids []string
	for _, n := range all {
		addrs = append(addrs, n.Client)
		ids = append(ids, n.ID)
	}
	slices.Sort(ids)
	proctest.WaitConvergedVoters(t, bin, strings.Join(addrs, ","), ids)
	gap := load.LongestGap()
	if gap > 10*time.Second {
		t.Errorf("acknowledgements stopped for %v", gap)
	}
	t.Logf("acknowledged %d adds; longest time without an acknowledgement %v", load.Total.Load(), gap)
}

// TestLostQuorumRecover: two of three nodes are lost for good (SIGKILL, data gone); the
// survivor, alone, cannot commit. Stopped, "cluster recover" makes it a one-node cluster,
// which restarts with every acknowledged input, takes writes, and grows back to three
// voters with two fresh nodes joining as learners.
func TestLostQuorumRecover(t *testing.T) {
	bin, c, ctx, load := proctest.LoadedCluster(t, 3*time.Minute, "q", 8, 500)
	load.Halt()
	// The leader survives: it holds every acknowledged input.
	survivor := proctest.LeaderNode(t, bin, c)
	for _, n := range c.Procs {
		if n != survivor {
			n.Kill()
			os.RemoveAll(n.Data)
		}
	}
	// Without a quorum the survivor takes no writes.
	func() {
		wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
		defer wcancel()
		cl, err := client.Dial(wctx, client.Config{Addrs: []string{survivor.Client}, MaxRetries: 2, TLS: proctest.TLS()})
		if err != nil {
			return // opening a session is a write too
		}
		defer cl.Close()
		if _, err := cl.CounterAdd(wctx, "no-quorum", 1); err == nil {
			t.Fatal("a write succeeded on a node without quorum")
		}
	}()
	survivor.Stop(10 * time.Second)
	r := proctest.MustRun(t, bin, "cluster", "recover", "--data", survivor.Data, "--members", survivor.ID+"="+survivor.Raft, "--partitions", "4")
	t.Log(r.Stdout)
	back := proctest.SpawnNode(t, bin, survivor.ID+"-recovered", "--id", survivor.ID, "--data", survivor.Data,
		"--raft", survivor.Raft, "--client", survivor.Client, "--admin", survivor.Admin, "--partitions", "4", "--log-level", "info")
	back.Raft, back.Client, back.Admin, back.Data = survivor.Raft, survivor.Client, survivor.Admin, survivor.Data
	if err := back.WaitReady(back.Admin, proctest.ReadyTimeout); err != nil {
		t.Fatal(err)
	}
	cl, err := client.Dial(ctx, client.Config{Addrs: []string{back.Client}, MaxRetries: -1, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	load.Check(t, ctx, cl)
	if _, err := cl.CounterAdd(ctx, "after-recovery", 1); err != nil {
		t.Fatalf("write after recovery: %v", err)
	}
	// The lost nodes' records go; two fresh nodes grow the cluster back to three.
	for _, n := range c.Procs {
		if n != survivor {
			proctest.MustRun(t, bin, "cluster", "remove", n.ID, "--addr", back.Client)
		}
	}
	n4 := joinNode(t, bin, "n4", back.Client)
	watchLearner(t, ctx, n4)
	n5 := joinNode(t, bin, "n5", back.Client+","+n4.Client)
	watchLearner(t, ctx, n5)
	ids := []string{survivor.ID, "n4", "n5"}
	slices.Sort(ids)
	proctest.WaitConvergedVoters(t, bin, strings.Join([]string{back.Client, n4.Client, n5.Client}, ","), ids)
	load.Check(t, ctx, cl)
}

// TestWipedDataDirRefused: a node restarting under its old id with an emptied data
// directory is refused with the documented message, whether it comes back with its old
// --bootstrap flags or with --join; the documented replace procedure (cluster remove,
// empty directory, --join) then succeeds. A node whose log (raft.db or raft-wal's
// segments, whichever the default store wrote) has one flipped byte in a log entry
// refuses to start.
func TestWipedDataDirRefused(t *testing.T) {
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, client.Config{Addrs: strings.Split(c.AddrFlag(), ","), MaxRetries: -1, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 50 {
		if _, err := cl.CounterAdd(ctx, fmt.Sprintf("flip-me-%d-abcdefghijklmnopqrstuvwxyz", i%5), 1); err != nil {
			t.Fatal(err)
		}
	}
	leader := proctest.LeaderNode(t, bin, c)
	var wiped, damaged *proctest.Node
	for _, n := range c.Procs {
		switch {
		case n == leader:
		case wiped == nil:
			wiped = n
		default:
			damaged = n
		}
	}
	// The leader has recorded every member's incarnation.
	testutil.WaitFor(t, 30*time.Second, func() error {
		st, err := cl.Status(ctx, leader.Client)
		if err != nil {
			return err
		}
		for _, m := range st.Nodes {
			if m.Incarnation == "" {
				return fmt.Errorf("no incarnation recorded for %s", m.ID)
			}
		}
		return nil
	})
	var peers []string
	for _, n := range c.Procs {
		peers = append(peers, n.ID+"="+n.Raft+"="+n.Client)
	}
	restart := func(n *proctest.Node, extra ...string) proctest.Result {
		args := append([]string{"node", "--id", n.ID, "--data", n.Data, "--raft", n.Raft, "--client", n.Client,
			"--admin", n.Admin, "--partitions", "4", "--log-level", "warn"}, extra...)
		return proctest.Run(t, bin, args...)
	}

	// The log and snapshots gone, the confirmed identity kept: refused at once.
	wiped.Stop(10 * time.Second)
	os.RemoveAll(filepath.Join(wiped.Data, "raft.db"))
	os.RemoveAll(filepath.Join(wiped.Data, "wal"))
	os.RemoveAll(filepath.Join(wiped.Data, "snapshots"))
	r := restart(wiped)
	proctest.CheckFailure(t, r, "holds no Raft log")
	// Wiped entirely, restarted with its old --bootstrap flags: the peers record another
	// incarnation under its id, so it refuses to bootstrap.
	os.RemoveAll(wiped.Data)
	r = restart(wiped, "--bootstrap", strings.Join(peers, ","))
	proctest.CheckFailure(t, r, "must not bootstrap again")
	if !strings.Contains(r.Stderr, "lockstep cluster remove "+wiped.ID) {
		t.Fatalf("the refusal does not say how to replace the node: %v", r)
	}

	// Wiped, restarted with --join: it runs, but the cluster refuses the join, and the log
	// it receives records another incarnation under its id: it stays out of votes and is
	// never ready.
	os.RemoveAll(wiped.Data)
	imposter := proctest.SpawnNode(t, bin, wiped.ID+"-imposter", "--id", wiped.ID, "--data", wiped.Data, "--raft", wiped.Raft,
		"--client", wiped.Client, "--admin", wiped.Admin, "--partitions", "4", "--join", leader.Client, "--log-level", "warn")
	testutil.WaitFor(t, 30*time.Second, func() error {
		st, err := cl.Status(ctx, wiped.Client)
		if err != nil {
			return err
		}
		if st.Ready || !strings.Contains(st.NotReadyReason, "wiped or replaced") {
			return fmt.Errorf("ready %t, reason %q", st.Ready, st.NotReadyReason)
		}
		return nil
	})
	if _, err := cl.CounterAdd(ctx, "while-imposter", 1); err != nil {
		t.Fatal(err)
	}
	imposter.Stop(10 * time.Second)

	// The replace procedure: remove, empty the directory, --join.
	replace := func(n *proctest.Node) {
		proctest.MustRun(t, bin, "cluster", "remove", n.ID, "--addr", leader.Client)
		os.RemoveAll(n.Data)
		again := proctest.SpawnNode(t, bin, n.ID+"-replaced", "--id", n.ID, "--data", n.Data, "--raft", n.Raft,
			"--client", n.Client, "--admin", n.Admin, "--partitions", "4", "--join", leader.Client, "--log-level", "warn")
		again.Raft, again.Client, again.Admin, again.Data = n.Raft, n.Client, n.Admin, n.Data
		watchLearner(t, ctx, again)
		proctest.WaitConvergedVoters(t, bin, c.AddrFlag(), []string{"n1", "n2", "n3"})
	}
	replace(wiped)

	// One flipped byte in a log entry of another node: it refuses to start.
	damaged.Stop(10 * time.Second)
	needle := []byte("flip-me-3-abcdefghijklmnopqrstuvwxyz")
	flipped := 0
	for _, db := range logFiles(t, damaged.Data) {
		b, err := os.ReadFile(db)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for i := bytes.Index(b, needle); i >= 0; {
			b[i+len(needle)-5] ^= 0x01
			n++
			j := bytes.Index(b[i+1:], needle)
			if j < 0 {
				break
			}
			i += 1 + j
		}
		if n > 0 {
			flipped += n
			if err := os.WriteFile(db, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	if flipped == 0 {
		t.Fatal("no log entry found to damage")
	}
	r = restart(damaged)
	proctest.CheckFailure(t, r, "data directory damaged")

	replace(damaged)
	if _, err := cl.CounterAdd(ctx, "after-replace", 1); err != nil {
		t.Fatal(err)
	}
}

// logFiles returns the files of the Raft log in a node's data dir: raft.db, or
// raft-wal's segment files.
func logFiles(t *testing.T, dataDir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dataDir, "wal", "*.wal"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "raft.db")); err == nil {
		files = append(files, filepath.Join(dataDir, "raft.db"))
	}
	return files
}

// TestClusterRecoverBadInput: "cluster recover" refuses bad input with a clear message
// and changes nothing: a malformed member, members without the node, a directory with no
// Raft log (not created), a running node's directory.
func TestClusterRecoverBadInput(t *testing.T) {
	bin := proctest.BuildBinary(t)
	missing := filepath.Join(t.TempDir(), "missing")
	proctest.CheckFailure(t, proctest.Run(t, bin, "cluster", "recover", "--data", missing, "--id", "n1", "--members", "n1"), "want ID=RAFTADDR")
	proctest.CheckFailure(t, proctest.Run(t, bin, "cluster", "recover", "--data", missing, "--id", "n1", "--members", ""), "want ID=RAFTADDR")
	proctest.CheckFailure(t, proctest.Run(t, bin, "cluster", "recover", "--data", missing, "--id", "n1", "--members", "n2=127.0.0.1:7002"),
		"the members must include this node, n1")
	proctest.CheckFailure(t, proctest.Run(t, bin, "cluster", "recover", "--data", missing, "--id", "n1", "--members", "n1=127.0.0.1:7001"),
		"holds no raft.db")
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("a refused recovery created %s: %v", missing, err)
	}
	c := proctest.StartCluster(t, bin, 1)
	n := c.Procs[0]
	proctest.CheckFailure(t, proctest.Run(t, bin, "cluster", "recover", "--data", n.Data, "--members", n.ID+"="+n.Raft, "--partitions", "4"),
		"is the node still running?")
}

// TestReadReplicaProcess: `lockstep node --join ... --read-replica` joins as a permanent
// non-voter; it becomes ready, `cluster status` shows it as read-replica and the cluster
// healthy, and its state hashes equal the voters'.
func TestReadReplicaProcess(t *testing.T) {
	bin, c, ctx, load := proctest.LoadedCluster(t, 2*time.Minute, "rr", 4, 200)
	a := testutil.FreeAddrs(t, 3)
	r := proctest.SpawnNode(t, bin, "r1", "--id", "r1", "--data", filepath.Join(t.TempDir(), "r1"), "--raft", a[0], "--client", a[1],
		"--admin", a[2], "--partitions", "4", "--join", c.AddrFlag(), "--read-replica", "--log-level", "warn")
	if err := r.WaitReady(a[2], proctest.ReadyTimeout); err != nil {
		t.Fatal(err)
	}
	load.WaitAcked(t, 200)
	load.Halt()
	load.Check(t, ctx, load.Client)
	testutil.WaitFor(t, 30*time.Second, func() error {
		res := proctest.Run(t, bin, "cluster", "status", "--addr", c.AddrFlag())
		if res.Code != 0 || !strings.Contains(res.Stdout, "read-replica") {
			return fmt.Errorf("cluster status: %v", res)
		}
		if !strings.Contains(res.Stdout, "4 replicas at applied index") {
			return fmt.Errorf("replicas not converged: %v", res)
		}
		return nil
	})
	cs := statusAnyHealth(t, bin, c.AddrFlag())
	voters := 0
	for _, n := range cs.Nodes {
		if n.Suffrage == "voter" {
			voters++
		}
		if n.NodeID == "r1" && (!n.ReadReplica || n.Suffrage != "learner") {
			t.Fatalf("r1: read replica %t, suffrage %q", n.ReadReplica, n.Suffrage)
		}
	}
	if voters != 3 {
		t.Fatalf("%d voters, want 3", voters)
	}
}
