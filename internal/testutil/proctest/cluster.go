package proctest

import (
	"bytes"
	"context"
	"crypto/tls"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/jepsen"
)

// Node is one `lockstep node` process: a node of a Cluster's jepsen.Cluster, or one
// SpawnNode started.
type Node struct {
	*jepsen.Process
	// ID is the node's id; Raft, Client and Admin are its listen addresses.
	ID, Raft, Client, Admin string
	// Data is its data directory, for restarts (a spawned node's test sets it, and Raft,
	// Client and Admin, from the flags it gave).
	Data string
	// Args are the flags it was started with, after "node".
	Args []string
	// CertsDir holds the certificates it serves with; "" for an insecure node.
	CertsDir string
}

// WaitReady waits until the node's /readyz at admin answers 200, at most timeout; the
// error wraps jepsen.ErrPortTaken if an address it was given was in use.
func (n *Node) WaitReady(admin string, timeout time.Duration) error {
	var tlsCfg *tls.Config
	if n.CertsDir != "" {
		tlsCfg = TLSOf(n.CertsDir)
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
	return SharedCerts()
}

// SpawnNode starts `lockstep node` with args, its output going to a log file, and kills
// it when the test ends.
func SpawnNode(t testing.TB, bin, id string, args ...string) *Node {
	t.Helper()
	return SpawnNodeEnv(t, bin, id, nil, args...)
}

// SpawnNodeEnv is SpawnNode with env added to Env (fault-injection variables).
func SpawnNodeEnv(t testing.TB, bin, id string, env []string, args ...string) *Node {
	t.Helper()
	env = append(Env(), env...)
	p, err := jepsen.StartProcess(filepath.Join(t.TempDir(), id+".log"), env, nil, bin, append([]string{"node"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{Process: p, ID: id, Args: args, CertsDir: certsOf(env, args)}
	t.Cleanup(func() {
		n.Kill()
		CheckLog(t, n.ID, n.Log())
	})
	return n
}

// CheckLog fails t if a node's log shows a data race, and shows the log if t failed.
func CheckLog(t testing.TB, id string, log []byte) {
	if bytes.Contains(log, []byte("DATA RACE")) {
		t.Errorf("node %s found a data race", id)
	}
	if t.Failed() {
		t.Logf("log of node %s:\n%s", id, log)
	}
}

// Cluster is a bootstrapped cluster of node processes: a jepsen.Cluster.
type Cluster struct {
	*jepsen.Cluster
	// Procs are its nodes, n1 first.
	Procs []*Node
}

// AddrFlag returns the nodes' client addresses as --addr takes them.
func (c *Cluster) AddrFlag() string {
	var a []string
	for _, n := range c.Procs {
		a = append(a, n.Client)
	}
	return strings.Join(a, ",")
}

// StartCluster starts a bootstrapped cluster of n node processes, n1 to nN with 4
// partitions, and waits until all are ready. If a port turned out to be taken, it starts
// the whole cluster again on new ports.
func StartCluster(t testing.TB, bin string, n int) *Cluster {
	t.Helper()
	return StartClusterWith(t, bin, n)
}

// StartClusterWith is StartCluster with extra flags for every node (--insecure, another
// --certs-dir, a limit).
func StartClusterWith(t testing.TB, bin string, n int, extra ...string) *Cluster {
	t.Helper()
	cfg := jepsen.ClusterConfig{Bin: bin, Nodes: n, Dir: t.TempDir(), Partitions: 4, ReadyTimeout: ReadyTimeout,
		Env: []string{"GORACE=atexit_sleep_ms=0"}, Net: jepsen.NetDirect, LogLevel: "warn", CertsDir: SharedCerts()}
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
	c := &Cluster{Cluster: jc}
	for _, jn := range jc.Nodes {
		c.Procs = append(c.Procs, &Node{Process: jn.Process(), ID: jn.ID, Raft: jn.Raft, Client: jn.Client,
			Admin: jn.Admin, Data: jn.DataDir(), Args: jn.Args(), CertsDir: cfg.CertsDir})
	}
	t.Cleanup(func() {
		jc.Close()
		for _, n := range c.Procs {
			CheckLog(t, n.ID, n.Log())
		}
	})
	return c
}
