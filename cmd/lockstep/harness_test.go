package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The harness runs the real binary: built once per test into a temp dir, nodes started
// as processes on loopback ports, every process killed when the test ends.

const (
	// commandTimeout bounds one run of an admin command.
	commandTimeout = 60 * time.Second
	// readyTimeout bounds waiting for started nodes to become ready.
	readyTimeout = 30 * time.Second
	// pollPause is the pause between polls of a condition with a deadline.
	pollPause = 20 * time.Millisecond
)

// buildBinary builds the lockstep command into a temp dir and returns its path. When the
// tests run with -race, so does the binary (its packages are compiled for it already).
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lockstep")
	args := []string{"build", "-o", bin}
	if raceBuild {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// binaryEnv is the environment of the processes started: a race-enabled binary would
// otherwise pause a second at exit.
func binaryEnv() []string {
	return append(os.Environ(), "GORACE=atexit_sleep_ms=0")
}

// result is what one run of the binary did.
type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d after %v\nstdout:\n%s\nstderr:\n%s", r.code, r.took, r.stdout, r.stderr)
}

// run runs the binary with args and waits for it.
func run(t *testing.T, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = binaryEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", args, err)
	}
	return r
}

// mustRun runs the binary and fails the test unless it exits 0.
func mustRun(t *testing.T, bin string, args ...string) result {
	t.Helper()
	r := run(t, bin, args...)
	if r.code != 0 {
		t.Fatalf("lockstep %s: %v", strings.Join(args, " "), r)
	}
	return r
}

// checkFailure checks that r failed the way every command must: a non-zero exit and one
// line on stderr, "lockstep: ..." containing want.
func checkFailure(t *testing.T, r result, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	if r.code == 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], "lockstep: ") || !strings.Contains(lines[0], want) {
		t.Fatalf("want a non-zero exit and one stderr line with %q; got %v", want, r)
	}
}

// freeAddrs returns n loopback addresses whose ports were free a moment ago. Another
// process may take one before we use it; startCluster retries then.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var lns []net.Listener
	var out []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

// procNode is one `lockstep node` process.
type procNode struct {
	id, raft, client, admin string
	data                    string // data directory, for restarts
	cmd                     *exec.Cmd
	logPath                 string
	exited                  chan struct{} // closed when the process has been waited for
}

// spawnNode starts `lockstep node` with args, its output going to a log file, and kills
// it when the test ends.
func spawnNode(t *testing.T, bin, id string, args ...string) *procNode {
	t.Helper()
	n := &procNode{id: id, logPath: filepath.Join(t.TempDir(), id+".log"), exited: make(chan struct{})}
	logf, err := os.Create(n.logPath)
	if err != nil {
		t.Fatal(err)
	}
	n.cmd = exec.Command(bin, append([]string{"node"}, args...)...)
	n.cmd.Env = binaryEnv()
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	if err := n.cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	go func() {
		n.cmd.Wait()
		logf.Close()
		close(n.exited)
	}()
	t.Cleanup(func() {
		n.kill()
		log, _ := os.ReadFile(n.logPath)
		if bytes.Contains(log, []byte("DATA RACE")) {
			t.Errorf("node %s found a data race", n.id)
		}
		if t.Failed() {
			t.Logf("log of node %s:\n%s", n.id, log)
		}
	})
	return n
}

// kill stops the process at once (SIGKILL) and waits for it.
func (n *procNode) kill() {
	select {
	case <-n.exited:
		return
	default:
	}
	n.cmd.Process.Kill()
	<-n.exited
}

func (n *procNode) running() bool {
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// procCluster is a cluster of node processes.
type procCluster struct {
	nodes []*procNode
}

// addrs returns the nodes' client addresses as --addr takes them.
func (c *procCluster) addrs() string {
	var a []string
	for _, n := range c.nodes {
		a = append(a, n.client)
	}
	return strings.Join(a, ",")
}

var errPortTaken = errors.New("a port was taken")

// startCluster starts a bootstrapped cluster of n node processes and waits until all are
// ready. If a port turned out to be taken, it starts the whole cluster again on new ports.
func startCluster(t *testing.T, bin string, n int) *procCluster {
	t.Helper()
	for attempt := 1; ; attempt++ {
		c, err := tryStartCluster(t, bin, n)
		if err == nil {
			return c
		}
		if attempt == 3 || !errors.Is(err, errPortTaken) {
			t.Fatal(err)
		}
		t.Logf("starting the cluster again: %v", err)
	}
}

func tryStartCluster(t *testing.T, bin string, n int) (*procCluster, error) {
	addrs := freeAddrs(t, 3*n)
	c := &procCluster{}
	var peers []string
	for i := range n {
		nd := &procNode{id: fmt.Sprintf("n%d", i+1), raft: addrs[3*i], client: addrs[3*i+1], admin: addrs[3*i+2]}
		c.nodes = append(c.nodes, nd)
		peers = append(peers, nd.id+"="+nd.raft+"="+nd.client)
	}
	for i, nd := range c.nodes {
		data := filepath.Join(t.TempDir(), nd.id)
		p := spawnNode(t, bin, nd.id, "--id", nd.id, "--data", data,
			"--raft", nd.raft, "--client", nd.client, "--admin", nd.admin, "--partitions", "4",
			"--bootstrap", strings.Join(peers, ","), "--log-level", "warn")
		p.raft, p.client, p.admin, p.data = nd.raft, nd.client, nd.admin, data
		c.nodes[i] = p
	}
	for _, nd := range c.nodes {
		if err := waitReady(nd); err != nil {
			for _, other := range c.nodes {
				other.kill()
			}
			return nil, err
		}
	}
	return c, nil
}

// waitReady polls the node's /readyz until it answers 200; it fails at once if the process
// exits (with errPortTaken if its log says an address was in use).
func waitReady(n *procNode) error {
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(readyTimeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		if !n.running() {
			log, _ := os.ReadFile(n.logPath)
			if bytes.Contains(log, []byte("address already in use")) {
				return fmt.Errorf("node %s: %w: %s", n.id, errPortTaken, log)
			}
			return fmt.Errorf("node %s exited: %s", n.id, log)
		}
		resp, err := hc.Get("http://" + n.admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(pollPause)
	}
	return fmt.Errorf("node %s not ready after %v: %s", n.id, readyTimeout, last)
}
