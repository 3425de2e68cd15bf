package benchmarks

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/jepsen"
)

// Real node processes for the cluster benchmarks users compare: `lockstep node` built once
// per test binary, started on loopback ports the OS chose, each with its own data dir and
// log file, stopped (SIGTERM, then SIGKILL) when the benchmark ends. The benchmark process
// is the client's. It follows cmd/lockstep/harness_test.go, kept to what benchmarks need.

// builtBinary is one build of ./cmd/lockstep.
type builtBinary struct {
	once sync.Once
	path string
	err  error
}

var (
	binMu    sync.Mutex
	binaries = map[string]*builtBinary{} // by build tags
	binDirs  []string                    // removed by TestMain
)

// lockstepBinary builds ./cmd/lockstep once into a temp dir (removed by TestMain) and
// returns its path.
func lockstepBinary(tb testing.TB) string { return lockstepBinaryTags(tb, "") }

// lockstepBinaryTags is lockstepBinary built with the build tags given (comma-separated;
// lockstep_nondet: a test procedure that breaks determinism).
func lockstepBinaryTags(tb testing.TB, tags string) string {
	tb.Helper()
	binMu.Lock()
	bb := binaries[tags]
	if bb == nil {
		bb = &builtBinary{}
		binaries[tags] = bb
	}
	binMu.Unlock()
	bb.once.Do(func() {
		dir, err := os.MkdirTemp("", "lockstep-bench-bin-")
		if err != nil {
			bb.err = err
			return
		}
		binMu.Lock()
		binDirs = append(binDirs, dir)
		binMu.Unlock()
		bb.path = filepath.Join(dir, "lockstep")
		out, err := exec.Command("go", "build", "-tags", tags, "-o", bb.path, "github.com/lockstepdb/lockstep/cmd/lockstep").CombinedOutput()
		if err != nil {
			bb.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if bb.err != nil {
		tb.Fatal(bb.err)
	}
	return bb.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range binDirs {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// proc is one `lockstep node` process.
type proc struct {
	*jepsen.Process
	id, raft, client, admin string
	args                    []string // its command line after the binary, for a supervisor
	// CertsDir holds the certificates it serves with (the shared test certificates); ""
	// for a node started with --insecure.
	CertsDir string
}

// startProc starts bin args as a jepsen.Process logging to logPath, with the shared test
// certificates (testutil.CertsDir) in its environment.
func startProc(logPath, bin string, args ...string) (*jepsen.Process, error) {
	env, err := procEnv()
	if err != nil {
		return nil, err
	}
	return jepsen.StartProcess(logPath, env, nil, bin, args...)
}

// procEnv is the environment of the node processes: this process's, with the shared test
// certificates as the --certs-dir default.
func procEnv() ([]string, error) {
	dir, err := testutil.SharedCertsDir()
	if err != nil {
		return nil, err
	}
	return append(os.Environ(), testutil.CertsDirEnv+"="+dir), nil
}

// certsDirOf is the certificates directory of a node started with args: the shared test
// certificates, or "" with --insecure.
func certsDirOf(args []string) string {
	if slices.Contains(args, "--insecure") {
		return ""
	}
	dir, _ := testutil.SharedCertsDir() // procEnv fails the start if it cannot be made
	return dir
}

// WaitReady waits until the node's /readyz at admin answers 200 (over TLS with
// p.CertsDir's client root unless insecure), at most timeout.
func (p *proc) WaitReady(admin string, timeout time.Duration) error {
	var tlsCfg *tls.Config
	if p.CertsDir != "" {
		var err error
		if tlsCfg, err = client.LoadTLS(p.CertsDir, "root"); err != nil {
			return err
		}
	}
	return p.Process.WaitReady(context.Background(), admin, tlsCfg, timeout)
}

// stopGrace is how long a node may take to exit after SIGTERM before it is killed.
const stopGrace = 10 * time.Second

// cpu returns the user+system CPU time the process has used so far (from /proc; zero
// where it cannot be read).
func (p *proc) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) start after the last ')';
	// utime and stime are fields 14 and 15 of the line, 12 and 13 after it.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * time.Second / 100 // USER_HZ is 100 on linux
}

// selfCPU returns the user+system CPU time of this process.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// metrics returns the node's Prometheus samples (name → value, histograms' _sum and _count
// among them; a labelled sample under its name with the labels as exposed, e.g.
// `x{stage="queue"}`) from its admin /metrics; nil if it did not answer.
func (p *proc) metrics() map[string]float64 {
	hc, scheme := &http.Client{Timeout: 5 * time.Second}, "http://"
	if p.CertsDir != "" {
		hc.Transport, scheme = adminTransport(p.CertsDir), "https://"
	}
	resp, err := hc.Get(scheme + p.admin + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil
	}
	m := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || strings.HasPrefix(line, "#") {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			m[f[0]] = v
		}
	}
	return m
}

// procCluster is n bootstrapped node processes.
type procCluster struct{ nodes []*proc }

// clientAddrs returns the nodes' client addresses.
func (c *procCluster) clientAddrs() []string {
	var a []string
	for _, n := range c.nodes {
		a = append(a, n.client)
	}
	return a
}

// dial returns a client of the cluster with the shared test certificates' client root,
// closed when the benchmark ends.
func (c *procCluster) dial(tb testing.TB) *client.Client {
	tb.Helper()
	cl, err := client.Dial(context.Background(), client.Config{Addrs: c.clientAddrs(), TLS: testutil.ClientTLS(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cl.Close() })
	return cl
}

// cpu returns each node process's CPU time so far.
func (c *procCluster) cpu() []time.Duration {
	var d []time.Duration
	for _, n := range c.nodes {
		d = append(d, n.cpu())
	}
	return d
}

// startProcs starts n node processes bootstrapped together (extra flags appended to each
// command line) and waits until every one is ready, which implies a leader. A port taken
// between choosing and binding starts the cluster again on new ports. The processes are
// stopped when the benchmark ends.
func startProcs(tb testing.TB, n int, extra ...string) *procCluster {
	tb.Helper()
	return startProcsBin(tb, lockstepBinary(tb), n, extra...)
}

// startProcsBin is startProcs with the binary bin.
func startProcsBin(tb testing.TB, bin string, n int, extra ...string) *procCluster {
	tb.Helper()
	for attempt := 1; ; attempt++ {
		c, err := tryStartProcs(tb, bin, n, extra)
		if err == nil {
			return c
		}
		if attempt == 3 || !errors.Is(err, jepsen.ErrPortTaken) {
			tb.Fatal(err)
		}
	}
}

func tryStartProcs(tb testing.TB, bin string, n int, extra []string) (*procCluster, error) {
	addrs := testutil.FreeAddrs(tb, 3*n)
	c := &procCluster{}
	var peers []string
	for i := range n {
		p := &proc{id: fmt.Sprintf("n%d", i+1), raft: addrs[3*i], client: addrs[3*i+1], admin: addrs[3*i+2]}
		c.nodes = append(c.nodes, p)
		peers = append(peers, p.id+"="+p.raft+"="+p.client)
	}
	dir := tb.TempDir()
	for _, p := range c.nodes {
		args := append([]string{"node", "--id", p.id, "--data", filepath.Join(dir, p.id),
			"--raft", p.raft, "--client", p.client, "--admin", p.admin,
			"--bootstrap", strings.Join(peers, ","), "--log-level", "warn"}, extra...)
		var err error
		p.args, p.CertsDir = args, certsDirOf(args)
		if p.Process, err = startProc(filepath.Join(dir, p.id+".log"), bin, args...); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() {
			p.Stop(stopGrace)
			if tb.Failed() {
				tb.Logf("log of node %s:\n%s", p.id, p.Log())
			}
		})
	}
	for _, p := range c.nodes {
		if err := p.WaitReady(p.admin, 30*time.Second); err != nil {
			for _, q := range c.nodes {
				q.Stop(stopGrace)
			}
			return nil, fmt.Errorf("node %s: %w", p.id, err)
		}
	}
	return c, nil
}

// metrics scrapes every node's metrics (see proc.metrics).
func (c *procCluster) metrics() []map[string]float64 {
	var m []map[string]float64
	for _, n := range c.nodes {
		m = append(m, n.metrics())
	}
	return m
}

// adminTransport returns an HTTP transport for the HTTPS admin port of a node using the
// certificates in dir, presenting client root's; nil (the default transport) if they do
// not load, and the scrape then fails.
func adminTransport(dir string) http.RoundTripper {
	cfg, err := client.LoadTLS(dir, "root")
	if err != nil {
		return nil
	}
	return &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}
}
