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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/jepsen"
)

// The harness runs the real binary, built once per build tags for the whole test binary
// (jepsen.BuildLockstep): clusters are jepsen.Clusters on the direct network (no fault
// injected), a node with flags of its own is a jepsen.Process; every process is killed
// when its test ends. It is tests/system's harness: the CLI tests here start nodes to
// run the commands against.

const (
	// commandTimeout bounds one run of an admin command.
	commandTimeout = 60 * time.Second
	// readyTimeout bounds waiting for started nodes to become ready.
	readyTimeout = 30 * time.Second
	// pollPause is the pause between polls of a condition with a deadline.
	pollPause = 20 * time.Millisecond
)

var (
	binMu    sync.Mutex
	binaries = map[string]string{} // built binaries, by build tags
	binDir   string                // holds them; removed by TestMain
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildBinary returns the lockstep command built with the build tags given
// (lockstep_nondet: a test procedure that breaks determinism), building it on first use.
// When the tests run with -race, so does the binary (its packages are compiled for it
// already).
func buildBinary(t testing.TB, tags ...string) string {
	t.Helper()
	key := strings.Join(tags, ",")
	binMu.Lock()
	defer binMu.Unlock()
	if bin, ok := binaries[key]; ok {
		return bin
	}
	if binDir == "" {
		dir, err := os.MkdirTemp("", "lockstep-system-bin-")
		if err != nil {
			t.Fatal(err)
		}
		binDir = dir
	}
	dir := filepath.Join(binDir, fmt.Sprint(len(binaries)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := jepsen.BuildLockstep(dir, raceBuild, tags...)
	if err != nil {
		t.Fatal(err)
	}
	binaries[key] = bin
	return bin
}

// binaryEnv is the environment of the processes started: a race-enabled binary would
// otherwise pause a second at exit, and nodes and commands use the shared test
// certificates (testutil.CertsDir) unless given --certs-dir or --insecure.
func binaryEnv() []string {
	return append(os.Environ(), "GORACE=atexit_sleep_ms=0", testutil.CertsDirEnv+"="+sharedCerts())
}

// sharedCerts is the shared test certificates' directory.
func sharedCerts() string {
	dir, err := testutil.SharedCertsDir()
	if err != nil {
		panic(fmt.Sprintf("test certificates: %v", err))
	}
	return dir
}

// testTLS returns client root's TLS configuration of the shared test certificates that
// binaryEnv gives the processes.
func testTLS() *tls.Config { return tlsOf(sharedCerts()) }

// tlsOf returns client root's TLS configuration of the certificates in dir.
func tlsOf(dir string) *tls.Config {
	cfg, err := client.LoadTLS(dir, "root")
	if err != nil {
		panic(fmt.Sprintf("test certificates: %v", err))
	}
	return cfg
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

// procNode is one `lockstep node` process: a node of a procCluster's jepsen.Cluster, or
// one spawnNode started.
type procNode struct {
	*jepsen.Process
	id, raft, client, admin string
	data                    string   // data directory, for restarts
	args                    []string // the flags it was started with, after "node"
	// CertsDir holds the certificates it serves with; "" for an insecure node.
	CertsDir string
}

// WaitReady waits until the node's /readyz at admin answers 200, at most timeout; the
// error wraps jepsen.ErrPortTaken if an address it was given was in use.
func (n *procNode) WaitReady(admin string, timeout time.Duration) error {
	var tlsCfg *tls.Config
	if n.CertsDir != "" {
		tlsCfg = tlsOf(n.CertsDir)
	}
	return n.Process.WaitReady(context.Background(), admin, tlsCfg, timeout)
}

// certsOf returns the certificates directory a node started with args and env (the
// process's environment) serves with: its --certs-dir, none ("") with --insecure, else
// env's LOCKSTEP_CERTS_DIR, else the shared test certificates.
func certsOf(env, args []string) string {
	for i, a := range args {
		switch {
		case a == "--insecure":
			return ""
		case a == "--certs-dir" && i+1 < len(args):
			return args[i+1]
		case strings.HasPrefix(a, "--certs-dir="):
			return strings.TrimPrefix(a, "--certs-dir=")
		}
	}
	for _, kv := range slices.Backward(env) {
		if dir, ok := strings.CutPrefix(kv, testutil.CertsDirEnv+"="); ok {
			return dir
		}
	}
	return sharedCerts()
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
	env = append(binaryEnv(), env...)
	p, err := jepsen.StartProcess(filepath.Join(t.TempDir(), id+".log"), env, nil, bin, append([]string{"node"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	n := &procNode{Process: p, id: id, args: args, CertsDir: certsOf(env, args)}
	t.Cleanup(func() {
		n.Kill()
		checkLog(t, n.id, n.Log())
	})
	return n
}

// checkLog fails t if a node's log shows a data race, and shows the log if t failed.
func checkLog(t testing.TB, id string, log []byte) {
	if bytes.Contains(log, []byte("DATA RACE")) {
		t.Errorf("node %s found a data race", id)
	}
	if t.Failed() {
		t.Logf("log of node %s:\n%s", id, log)
	}
}

// procCluster is a bootstrapped cluster of node processes: a jepsen.Cluster.
type procCluster struct {
	*jepsen.Cluster
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

// startCluster starts a bootstrapped cluster of n node processes, n1 to nN with 4
// partitions, and waits until all are ready. If a port turned out to be taken, it starts
// the whole cluster again on new ports.
func startCluster(t *testing.T, bin string, n int) *procCluster {
	t.Helper()
	return startClusterWith(t, bin, n)
}

// startClusterWith is startCluster with extra flags for every node (--insecure, another
// --certs-dir, a limit).
func startClusterWith(t testing.TB, bin string, n int, extra ...string) *procCluster {
	t.Helper()
	cfg := jepsen.ClusterConfig{Bin: bin, Nodes: n, Dir: t.TempDir(), Partitions: 4, ReadyTimeout: readyTimeout,
		Env: []string{"GORACE=atexit_sleep_ms=0"}, Net: jepsen.NetDirect, LogLevel: "warn", CertsDir: sharedCerts()}
	for i := 0; i < len(extra); i++ {
		switch a := extra[i]; {
		case a == "--insecure":
			cfg.Insecure, cfg.CertsDir = true, ""
		case a == "--certs-dir" && i+1 < len(extra):
			cfg.CertsDir = extra[i+1]
			i++
		default:
			cfg.Args = append(cfg.Args, a)
		}
	}
	jc, err := jepsen.StartCluster(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &procCluster{Cluster: jc}
	for _, jn := range jc.Nodes {
		c.nodes = append(c.nodes, &procNode{Process: jn.Process(), id: jn.ID, raft: jn.Raft, client: jn.Client,
			admin: jn.Admin, data: jn.DataDir(), args: jn.Args(), CertsDir: cfg.CertsDir})
	}
	t.Cleanup(func() {
		jc.Close()
		for _, n := range c.nodes {
			checkLog(t, n.id, n.Log())
		}
	})
	return c
}
