package system

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
)

// Replica lifecycle with real processes (issue 13): joins as learners, replacement of a
// lost node, recovery from lost quorum, wiped and damaged data directories.

// counterLoad adds to per-worker counters until stopped, counting acknowledged adds and
// adds whose outcome is unknown, and the longest time without an acknowledgement.
type counterLoad struct {
	cl             *client.Client
	acked, unknown []int64
	total          atomic.Int64
	stop           atomic.Bool
	wg             sync.WaitGroup
	mu             sync.Mutex
	last           time.Time
	longestGap     time.Duration
	prefix         string
	workers        int
}

func startLoad(t *testing.T, ctx context.Context, addrs []string, prefix string, workers int) *counterLoad {
	t.Helper()
	cl, err := client.Dial(ctx, client.Config{Addrs: addrs, MaxRetries: -1, TLS: testTLS()})
	if err != nil {
		t.Fatal(err)
	}
	l := &counterLoad{cl: cl, acked: make([]int64, workers), unknown: make([]int64, workers), last: time.Now(),
		prefix: prefix, workers: workers}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for !l.stop.Load() {
				actx, cancel := context.WithTimeout(ctx, 30*time.Second)
				_, err := cl.CounterAdd(actx, fmt.Sprintf("%s%d", prefix, w), 1)
				cancel()
				if err != nil {
					l.unknown[w]++
					continue
				}
				l.acked[w]++
				l.total.Add(1)
				now := time.Now()
				l.mu.Lock()
				l.longestGap = max(l.longestGap, now.Sub(l.last))
				l.last = now
				l.mu.Unlock()
			}
		}()
	}
	t.Cleanup(func() { l.halt(); cl.Close() })
	return l
}

// loadedCluster starts a 3-node cluster of processes under a counter load of workers
// adders (keys prefix0, prefix1, ...) and waits for acked adds. ctx ends after timeout,
// or when the test ends, before the load's and the cluster's cleanups run.
func loadedCluster(t *testing.T, timeout time.Duration, prefix string, workers int, acked int64) (bin string, c *procCluster, ctx context.Context, load *counterLoad) {
	t.Helper()
	bin = buildBinary(t)
	c = startCluster(t, bin, 3)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	load = startLoad(t, ctx, strings.Split(c.addrs(), ","), prefix, workers)
	t.Cleanup(cancel)
	load.waitAcked(t, acked)
	return bin, c, ctx, load
}

// waitAcked waits until n more adds are acknowledged.
func (l *counterLoad) waitAcked(t *testing.T, n int64) {
	t.Helper()
	from := l.total.Load()
	testutil.WaitFor(t, 60*time.Second, func() error {
		if got := l.total.Load() - from; got < n {
			return fmt.Errorf("%d of %d adds acknowledged", got, n)
		}
		return nil
	})
}

func (l *counterLoad) halt() {
	l.stop.Store(true)
	l.wg.Wait()
}

// check verifies every counter (read linearizably through cl) holds its acknowledged
// adds plus at most the unknown ones (DESIGN.md invariants 3 and 4).
func (l *counterLoad) check(t *testing.T, ctx context.Context, cl *client.Client) {
	t.Helper()
	for w := range l.workers {
		got, err := cl.CounterGet(ctx, fmt.Sprintf("%s%d", l.prefix, w))
		if err != nil {
			t.Fatalf("#%d: counter.get: %v", w, err)
		}
		if got < l.acked[w] || got > l.acked[w]+l.unknown[w] {
			t.Errorf("#%d: counter %d, want %d acknowledged + at most %d unknown", w, got, l.acked[w], l.unknown[w])
		}
	}
}

// statusAnyHealth is `cluster status --output json`, whatever the cluster's health (the
// exit code says which problem; the JSON is printed either way).
func statusAnyHealth(t *testing.T, bin, addrs string) clusterStatusJSON {
	t.Helper()
	r := run(t, bin, "cluster", "status", "--output", "json", "--addr", addrs)
	var cs clusterStatusJSON
	if err := json.Unmarshal([]byte(r.stdout), &cs); err != nil {
		t.Fatalf("cluster status json: %v: %v", err, r)
	}
	return cs
}

// leaderNode returns the node process that leads.
func leaderNode(t *testing.T, bin string, c *procCluster) *procNode {
	t.Helper()
	id := statusAnyHealth(t, bin, c.addrs()).Leader
	for _, n := range c.nodes {
		if n.id == id {
			return n
		}
	}
	t.Fatalf("no leader among the nodes (leader %q)", id)
	return nil
}

// joinNode starts a fresh node process that joins the cluster at seeds.
func joinNode(t *testing.T, bin, id, seeds string) *procNode {
	t.Helper()
	a := testutil.FreeAddrs(t, 3)
	data := filepath.Join(t.TempDir(), id)
	n := spawnNode(t, bin, id, "--id", id, "--data", data, "--raft", a[0], "--client", a[1], "--admin", a[2],
		"--partitions", "4", "--join", seeds, "--log-level", "warn")
	n.raft, n.client, n.admin, n.data = a[0], a[1], a[2], data
	return n
}

// waitVoterWithSameState waits until every node of nodes is a ready voter, all at the
// same applied index with equal state hashes, and returns the learner observations: for
// each node of watch, whether it was ever seen as a learner, and whether it was ever seen
// ready while a learner (never allowed).
func waitConvergedVoters(t *testing.T, bin string, addrs string, ids []string) {
	t.Helper()
	testutil.WaitFor(t, 90*time.Second, func() error {
		cs := statusAnyHealth(t, bin, addrs)
		var hashes [][]string
		var applied []uint64
		var got []string
		for _, n := range cs.Nodes {
			if n.Error != "" {
				continue
			}
			if n.Suffrage != "voter" || !n.Ready {
				return fmt.Errorf("%s: suffrage %q ready %t (%s)", n.NodeID, n.Suffrage, n.Ready, n.NotReadyReason)
			}
			got = append(got, n.NodeID)
			hashes = append(hashes, n.Hashes)
			applied = append(applied, n.AppliedIndex)
		}
		slices.Sort(got)
		if !slices.Equal(got, ids) {
			return fmt.Errorf("voters answering %v, want %v", got, ids)
		}
		for i := range hashes {
			if applied[i] != applied[0] || !slices.Equal(hashes[i], hashes[0]) {
				return fmt.Errorf("replicas differ: applied %v", applied)
			}
		}
		return nil
	})
}

// watchLearner polls node n's status until it is a voter, and fails the test if it is
// ever ready before (a learner serves nothing) or never seen as a learner.
func watchLearner(t *testing.T, ctx context.Context, n *procNode) {
	t.Helper()
	cl, err := client.Open(client.Config{Addrs: []string{n.client}, TLS: testTLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sawLearner := false
	testutil.WaitFor(t, 90*time.Second, func() error {
		st, err := cl.Status(ctx, n.client)
		if err != nil {
			return err
		}
		if st.Suffrage != "voter" {
			if st.Ready {
				t.Fatalf("%s ready while %q: %+v", n.id, st.Suffrage, st)
			}
			sawLearner = sawLearner || st.Suffrage == "learner"
			return fmt.Errorf("%s: %q, %s", n.id, st.Suffrage, st.NotReadyReason)
		}
		return nil
	})
	if !sawLearner {
		t.Logf("%s was promoted before a poll saw it as a learner", n.id)
	}
}

// TestGhostJoinsHarmless is the scenario of issue 13: three "cluster join" calls naming
// addresses where nothing listens used to make a 3-node cluster a 6-voter cluster with 3
// alive, leaderless for good. They now add three learners that never count towards the
// quorum: the cluster keeps accepting writes, with 3 voters, and the leader reports the
// ghosts as unreachable learners.
func TestGhostJoinsHarmless(t *testing.T) {
	bin, c, ctx, load := loadedCluster(t, 3*time.Minute, "g", 8, 200)
	// Joins of addresses where nothing answers are refused before any change to the
	// membership (node/reachable.go); were they admitted, they would be learners only.
	ghosts := testutil.FreeAddrs(t, 6)
	for i := range 3 {
		r := run(t, bin, "cluster", "join", "--addr", c.addrs(), "--id", fmt.Sprintf("ghost%d", i),
			"--raft", ghosts[2*i], "--client", ghosts[2*i+1])
		checkFailure(t, r, "does not answer")
	}
	load.waitAcked(t, 500)
	// A node failure on top: the 3 real voters still hold a quorum.
	var follower *procNode
	leader := leaderNode(t, bin, c)
	for _, n := range c.nodes {
		if n != leader {
			follower = n
			break
		}
	}
	follower.Kill()
	load.waitAcked(t, 300)
	load.halt()
	load.check(t, ctx, load.cl)

	cs := statusAnyHealth(t, bin, c.addrs())
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
	bin, c, ctx, load := loadedCluster(t, 3*time.Minute, "r", 8, 300)
	leader := leaderNode(t, bin, c)
	var lost *procNode
	var alive []*procNode
	for _, n := range c.nodes {
		if n != leader && lost == nil {
			lost = n
		} else {
			alive = append(alive, n)
		}
	}
	lost.Kill()
	load.waitAcked(t, 200)
	mustRun(t, bin, "cluster", "remove", lost.id, "--addr", c.addrs())
	var seeds []string
	for _, n := range alive {
		seeds = append(seeds, n.client)
	}
	fresh := joinNode(t, bin, "n4", strings.Join(seeds, ","))
	watchLearner(t, ctx, fresh)
	load.waitAcked(t, 300)
	load.halt()
	load.check(t, ctx, load.cl)
	all := append(alive, fresh)
	var addrs, ids []string
	for _, n := range all {
		addrs = append(addrs, n.client)
		ids = append(ids, n.id)
	}
	slices.Sort(ids)
	waitConvergedVoters(t, bin, strings.Join(addrs, ","), ids)
	load.mu.Lock()
	gap := load.longestGap
	load.mu.Unlock()
	if gap > 10*time.Second {
		t.Errorf("acknowledgements stopped for %v", gap)
	}
	t.Logf("acknowledged %d adds; longest time without an acknowledgement %v", load.total.Load(), gap)
}

// TestLostQuorumRecover: two of three nodes are lost for good (SIGKILL, data gone); the
// survivor, alone, cannot commit. Stopped, "cluster recover" makes it a one-node cluster,
// which restarts with every acknowledged input, takes writes, and grows back to three
// voters with two fresh nodes joining as learners.
func TestLostQuorumRecover(t *testing.T) {
	bin, c, ctx, load := loadedCluster(t, 3*time.Minute, "q", 8, 500)
	load.halt()
	// The leader survives: it holds every acknowledged input.
	survivor := leaderNode(t, bin, c)
	for _, n := range c.nodes {
		if n != survivor {
			n.Kill()
			os.RemoveAll(n.data)
		}
	}
	// Without a quorum the survivor takes no writes.
	func() {
		wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
		defer wcancel()
		cl, err := client.Dial(wctx, client.Config{Addrs: []string{survivor.client}, MaxRetries: 2, TLS: testTLS()})
		if err != nil {
			return // opening a session is a write too
		}
		defer cl.Close()
		if _, err := cl.CounterAdd(wctx, "no-quorum", 1); err == nil {
			t.Fatal("a write succeeded on a node without quorum")
		}
	}()
	survivor.Stop(10 * time.Second)
	r := mustRun(t, bin, "cluster", "recover", "--data", survivor.data, "--members", survivor.id+"="+survivor.raft, "--partitions", "4")
	t.Log(r.stdout)
	back := spawnNode(t, bin, survivor.id+"-recovered", "--id", survivor.id, "--data", survivor.data,
		"--raft", survivor.raft, "--client", survivor.client, "--admin", survivor.admin, "--partitions", "4", "--log-level", "info")
	back.raft, back.client, back.admin, back.data = survivor.raft, survivor.client, survivor.admin, survivor.data
	if err := back.WaitReady(back.admin, readyTimeout); err != nil {
		t.Fatal(err)
	}
	cl, err := client.Dial(ctx, client.Config{Addrs: []string{back.client}, MaxRetries: -1, TLS: testTLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	load.check(t, ctx, cl)
	if _, err := cl.CounterAdd(ctx, "after-recovery", 1); err != nil {
		t.Fatalf("write after recovery: %v", err)
	}
	// The lost nodes' records go; two fresh nodes grow the cluster back to three.
	for _, n := range c.nodes {
		if n != survivor {
			mustRun(t, bin, "cluster", "remove", n.id, "--addr", back.client)
		}
	}
	n4 := joinNode(t, bin, "n4", back.client)
	watchLearner(t, ctx, n4)
	n5 := joinNode(t, bin, "n5", back.client+","+n4.client)
	watchLearner(t, ctx, n5)
	ids := []string{survivor.id, "n4", "n5"}
	slices.Sort(ids)
	waitConvergedVoters(t, bin, strings.Join([]string{back.client, n4.client, n5.client}, ","), ids)
	load.check(t, ctx, cl)
}

// TestWipedDataDirRefused: a node restarting under its old id with an emptied data
// directory is refused with the documented message, whether it comes back with its old
// --bootstrap flags or with --join; the documented replace procedure (cluster remove,
// empty directory, --join) then succeeds. A node whose log (raft.db or raft-wal's
// segments, whichever the default store wrote) has one flipped byte in a log entry
// refuses to start.
func TestWipedDataDirRefused(t *testing.T) {
	bin := buildBinary(t)
	c := startCluster(t, bin, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, client.Config{Addrs: strings.Split(c.addrs(), ","), MaxRetries: -1, TLS: testTLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 50 {
		if _, err := cl.CounterAdd(ctx, fmt.Sprintf("flip-me-%d-abcdefghijklmnopqrstuvwxyz", i%5), 1); err != nil {
			t.Fatal(err)
		}
	}
	leader := leaderNode(t, bin, c)
	var wiped, damaged *procNode
	for _, n := range c.nodes {
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
		st, err := cl.Status(ctx, leader.client)
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
	for _, n := range c.nodes {
		peers = append(peers, n.id+"="+n.raft+"="+n.client)
	}
	restart := func(n *procNode, extra ...string) result {
		args := append([]string{"node", "--id", n.id, "--data", n.data, "--raft", n.raft, "--client", n.client,
			"--admin", n.admin, "--partitions", "4", "--log-level", "warn"}, extra...)
		return run(t, bin, args...)
	}

	// The log and snapshots gone, the confirmed identity kept: refused at once.
	wiped.Stop(10 * time.Second)
	os.RemoveAll(filepath.Join(wiped.data, "raft.db"))
	os.RemoveAll(filepath.Join(wiped.data, "wal"))
	os.RemoveAll(filepath.Join(wiped.data, "snapshots"))
	r := restart(wiped)
	checkFailure(t, r, "holds no Raft log")
	// Wiped entirely, restarted with its old --bootstrap flags: the peers record another
	// incarnation under its id, so it refuses to bootstrap.
	os.RemoveAll(wiped.data)
	r = restart(wiped, "--bootstrap", strings.Join(peers, ","))
	checkFailure(t, r, "must not bootstrap again")
	if !strings.Contains(r.stderr, "lockstep cluster remove "+wiped.id) {
		t.Fatalf("the refusal does not say how to replace the node: %v", r)
	}

	// Wiped, restarted with --join: it runs, but the cluster refuses the join, and the log
	// it receives records another incarnation under its id: it stays out of votes and is
	// never ready.
	os.RemoveAll(wiped.data)
	imposter := spawnNode(t, bin, wiped.id+"-imposter", "--id", wiped.id, "--data", wiped.data, "--raft", wiped.raft,
		"--client", wiped.client, "--admin", wiped.admin, "--partitions", "4", "--join", leader.client, "--log-level", "warn")
	testutil.WaitFor(t, 30*time.Second, func() error {
		st, err := cl.Status(ctx, wiped.client)
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
	replace := func(n *procNode) {
		mustRun(t, bin, "cluster", "remove", n.id, "--addr", leader.client)
		os.RemoveAll(n.data)
		again := spawnNode(t, bin, n.id+"-replaced", "--id", n.id, "--data", n.data, "--raft", n.raft,
			"--client", n.client, "--admin", n.admin, "--partitions", "4", "--join", leader.client, "--log-level", "warn")
		again.raft, again.client, again.admin, again.data = n.raft, n.client, n.admin, n.data
		watchLearner(t, ctx, again)
		waitConvergedVoters(t, bin, c.addrs(), []string{"n1", "n2", "n3"})
	}
	replace(wiped)

	// One flipped byte in a log entry of another node: it refuses to start.
	damaged.Stop(10 * time.Second)
	needle := []byte("flip-me-3-abcdefghijklmnopqrstuvwxyz")
	flipped := 0
	for _, db := range logFiles(t, damaged.data) {
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
	checkFailure(t, r, "data directory damaged")

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
	bin := buildBinary(t)
	missing := filepath.Join(t.TempDir(), "missing")
	checkFailure(t, run(t, bin, "cluster", "recover", "--data", missing, "--id", "n1", "--members", "n1"), "want ID=RAFTADDR")
	checkFailure(t, run(t, bin, "cluster", "recover", "--data", missing, "--id", "n1", "--members", ""), "want ID=RAFTADDR")
	checkFailure(t, run(t, bin, "cluster", "recover", "--data", missing, "--id", "n1", "--members", "n2=127.0.0.1:7002"),
		"the members must include this node, n1")
	checkFailure(t, run(t, bin, "cluster", "recover", "--data", missing, "--id", "n1", "--members", "n1=127.0.0.1:7001"),
		"holds no raft.db")
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("a refused recovery created %s: %v", missing, err)
	}
	c := startCluster(t, bin, 1)
	n := c.nodes[0]
	checkFailure(t, run(t, bin, "cluster", "recover", "--data", n.data, "--members", n.id+"="+n.raft, "--partitions", "4"),
		"is the node still running?")
}

// TestReadReplicaProcess: `lockstep node --join ... --read-replica` joins as a permanent
// non-voter; it becomes ready, `cluster status` shows it as read-replica and the cluster
// healthy, and its state hashes equal the voters'.
func TestReadReplicaProcess(t *testing.T) {
	bin, c, ctx, load := loadedCluster(t, 2*time.Minute, "rr", 4, 200)
	a := testutil.FreeAddrs(t, 3)
	r := spawnNode(t, bin, "r1", "--id", "r1", "--data", filepath.Join(t.TempDir(), "r1"), "--raft", a[0], "--client", a[1],
		"--admin", a[2], "--partitions", "4", "--join", c.addrs(), "--read-replica", "--log-level", "warn")
	if err := r.WaitReady(a[2], readyTimeout); err != nil {
		t.Fatal(err)
	}
	load.waitAcked(t, 200)
	load.halt()
	load.check(t, ctx, load.cl)
	testutil.WaitFor(t, 30*time.Second, func() error {
		res := run(t, bin, "cluster", "status", "--addr", c.addrs())
		if res.code != 0 || !strings.Contains(res.stdout, "read-replica") {
			return fmt.Errorf("cluster status: %v", res)
		}
		if !strings.Contains(res.stdout, "4 replicas at applied index") {
			return fmt.Errorf("replicas not converged: %v", res)
		}
		return nil
	})
	cs := statusAnyHealth(t, bin, c.addrs())
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
