package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
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

// buildBinary builds the lockstep command into a temp dir and returns its path, with the
// build tags given (lockstep_nondet: a test procedure that breaks determinism). When the
// tests run with -race, so does the binary (its packages are compiled for it already).
func buildBinary(t testing.TB, tags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lockstep")
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
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
// otherwise pause a second at exit, and nodes and commands use the shared test
// certificates (testutil.CertsDir) unless given --certs-dir or --insecure.
func binaryEnv() []string {
	dir, err := testutil.SharedCertsDir()
	if err != nil {
		panic(fmt.Sprintf("test certificates: %v", err))
	}
	return append(os.Environ(), "GORACE=atexit_sleep_ms=0", testutil.CertsDirEnv+"="+dir)
}

// testTLS returns client root's TLS configuration of the shared test certificates that
// binaryEnv gives the processes.
func testTLS() *tls.Config {
	dir, err := testutil.SharedCertsDir()
	if err == nil {
		var cfg *tls.Config
		if cfg, err = client.LoadTLS(dir, "root"); err == nil {
			return cfg
		}
	}
	panic(fmt.Sprintf("test certificates: %v", err))
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

// run runs the binary with args and waits for it, at most commandTimeout.
func run(t *testing.T, bin string, args ...string) result {
	t.Helper()
	return runWithin(t, commandTimeout, bin, args...)
}

// runWithin is run for a command that may take longer: it is killed after timeout.
func runWithin(t *testing.T, timeout time.Duration, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
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

// procNode is one `lockstep node` process.
type procNode struct {
	*testutil.Proc
	id, raft, client, admin string
	data                    string   // data directory, for restarts
	args                    []string // the flags it was started with, after "node"
}

// spawnNode starts `lockstep node` with args, its output going to a log file, and kills
// it when the test ends.
func spawnNode(t testing.TB, bin, id string, args ...string) *procNode {
	t.Helper()
	return spawnNodeEnv(t, bin, id, nil, args...)
}

// spawnNodeEnv is spawnNode with env added to binaryEnv (fault-injection variables).
func spawnNodeEnv(t testing.TB, bin, id string, env []string, args ...string) *procNode {
	t.Helper()
	p, err := testutil.StartProc(filepath.Join(t.TempDir(), id+".log"), append(binaryEnv(), env...), bin, append([]string{"node"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	n := &procNode{Proc: p, id: id, args: args}
	t.Cleanup(func() {
		n.Kill()
		log := n.Log()
		if bytes.Contains(log, []byte("DATA RACE")) {
			t.Errorf("node %s found a data race", n.id)
		}
		if t.Failed() {
			t.Logf("log of node %s:\n%s", n.id, log)
		}
	})
	return n
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

// startCluster starts a bootstrapped cluster of n node processes and waits until all are
// ready. If a port turned out to be taken, it starts the whole cluster again on new ports.
func startCluster(t *testing.T, bin string, n int) *procCluster {
	t.Helper()
	return startClusterWith(t, bin, n)
}

// startClusterWith is startCluster with extra flags for every node (--insecure, another
// --certs-dir).
func startClusterWith(t testing.TB, bin string, n int, extra ...string) *procCluster {
	t.Helper()
	for attempt := 1; ; attempt++ {
		c, err := tryStartCluster(t, bin, n, extra...)
		if err == nil {
			return c
		}
		if attempt == 3 || !errors.Is(err, testutil.ErrPortTaken) {
			t.Fatal(err)
		}
		t.Logf("starting the cluster again: %v", err)
	}
}

func tryStartCluster(t testing.TB, bin string, n int, extra ...string) (*procCluster, error) {
	addrs := testutil.FreeAddrs(t, 3*n)
	c := &procCluster{}
	var peers []string
	for i := range n {
		nd := &procNode{id: fmt.Sprintf("n%d", i+1), raft: addrs[3*i], client: addrs[3*i+1], admin: addrs[3*i+2]}
		c.nodes = append(c.nodes, nd)
		peers = append(peers, nd.id+"="+nd.raft+"="+nd.client)
	}
	for i, nd := range c.nodes {
		data := filepath.Join(t.TempDir(), nd.id)
		p := spawnNode(t, bin, nd.id, append([]string{"--id", nd.id, "--data", data,
			"--raft", nd.raft, "--client", nd.client, "--admin", nd.admin, "--partitions", "4",
			"--bootstrap", strings.Join(peers, ","), "--log-level", "warn"}, extra...)...)
		p.raft, p.client, p.admin, p.data = nd.raft, nd.client, nd.admin, data
		c.nodes[i] = p
	}
	for _, nd := range c.nodes {
		if err := nd.WaitReady(nd.admin, readyTimeout); err != nil {
			for _, other := range c.nodes {
				other.Kill()
			}
			return nil, fmt.Errorf("node %s: %w", nd.id, err)
		}
	}
	return c, nil
}
