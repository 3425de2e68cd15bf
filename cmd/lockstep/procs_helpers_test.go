package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/certs"
	"github.com/lockstepdb/lockstep/internal/testutil"
)

// Helpers of the CLI tests that run node processes under load (cluster restart-plan,
// processors, roles). The process-level node tests moved to tests/system, which has its
// own copies built on jepsen.Cluster; these stay on the harness of harness_test.go.

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

// startCustomProcNodes is startCustomProc returning every node's client address.
func startCustomProcNodes(t *testing.T) []string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "customproc")
	args := []string{"build", "-o", exe}
	if raceBuild {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, "../../examples/customproc")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(exe, "-serve", "-dir", t.TempDir())
	cmd.Env = binaryEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if strings.Contains(stderr.String(), "DATA RACE") || t.Failed() {
			t.Errorf("customproc stderr:\n%s", stderr.String())
		}
	})
	select {
	case line := <-lines:
		addrs, ok := strings.CutPrefix(line, "addrs ")
		if !ok || addrs == "" {
			t.Fatalf("customproc printed %q, want its addresses", line)
		}
		return strings.Split(addrs, ",")
	case <-exited:
		t.Fatalf("customproc exited: %s", stderr.String())
	case <-time.After(readyTimeout + 30*time.Second):
		t.Fatalf("customproc printed no addresses: %s", stderr.String())
	}
	return nil
}

func nodeCert(t *testing.T, dir string) *tls.Certificate {
	b, err := certs.LoadNode(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &b.Cert
}
