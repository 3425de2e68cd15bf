package jepsen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/faultenv"
)

// Cluster control: real `lockstep node` processes (process.go) on loopback, each with its
// own data directory, log file and clock file, its links cut by the harness's Network
// (the proxy or the iptables backend; on the latter each node runs as its own uid,
// nodeuser.go). The harness's runs use it, and so do the process-level tests of
// tests/system.

// ErrPortTaken is returned when a node exited because a port chosen for it was taken
// meanwhile; StartCluster then starts again on new ports.
var ErrPortTaken = errors.New("jepsen: a port was taken")

// ErrNodeExited is returned when a node process exited by itself while starting (for a
// reason other than ErrPortTaken): the node refused its own data, crashed, or failed a
// check. Under a run it is a finding about the node, not a harness failure.
var ErrNodeExited = errors.New("exited while starting")

// ClusterConfig describes the cluster to start.
type ClusterConfig struct {
	// Bin is the lockstep binary. Required.
	Bin string
	// NodeCommand is the command of Bin that runs a node, before the node's flags.
	// Default ["node"]; `lockstep bench nexmark` gives its bench node's.
	NodeCommand []string
	// Nodes is the number of nodes, 1 to 9. Default 3.
	Nodes int
	// Dir holds one folder per node (data/, node.log, clock). Required.
	Dir string
	// Partitions is the partition count. Default 4.
	Partitions int
	// ReadyTimeout bounds the wait for a started node to be ready. Default 30s.
	ReadyTimeout time.Duration
	// Env is added to the nodes' environment (GORACE=..., for example).
	Env []string
	// Args are extra flags of every node process (--session-ttl 2s, for example).
	Args []string
	// Clients is the number of client endpoints of the Network: WorkerClient(w) for w
	// below it reaches the nodes as endpoint w, which client faults cut.
	Clients int
	// Net is the network backend: NetProxy (default), NetIPTables, NetAuto (iptables
	// when it works here), or NetDirect (no fault injection at all).
	Net string
	// CertsDir, if set, holds the certificates the nodes use (a CA, a node certificate for
	// 127.0.0.1 and client root's, as `lockstep cert` makes them) instead of ones made for
	// the cluster: a test shares one set between its clusters and its CLI commands.
	CertsDir string
	// Insecure starts the nodes with --insecure: no TLS, no authentication.
	Insecure bool
	// LogLevel is the nodes' --log-level. Default "info".
	LogLevel string
	// KeepData keeps, at Close, the private folder of the iptables backend's nodes (their
	// data directories and certificates); the proxy backend's data directories are in
	// Dir and stay anyway.
	KeepData bool
}

func (c *ClusterConfig) defaults() error {
	if c.Nodes == 0 {
		c.Nodes = 3
	}
	if c.Partitions == 0 {
		c.Partitions = 4
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = 30 * time.Second
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if len(c.NodeCommand) == 0 {
		c.NodeCommand = []string{"node"}
	}
	switch {
	case c.Bin == "":
		return fmt.Errorf("jepsen: no lockstep binary given")
	case c.Dir == "":
		return fmt.Errorf("jepsen: no directory given")
	case c.Nodes < 1 || c.Nodes > 9:
		return fmt.Errorf("jepsen: %d nodes: want 1 to 9", c.Nodes)
	case c.Insecure && c.CertsDir != "":
		return fmt.Errorf("jepsen: certificates given for an insecure cluster")
	}
	switch c.Net {
	case "":
		c.Net = NetProxy
	case NetAuto:
		backend, _, err := SelectNet(NetAuto, nil)
		if err != nil {
			return err
		}
		c.Net = backend
	case NetProxy, NetIPTables, NetDirect:
	default:
		return fmt.Errorf("jepsen: unknown network backend %q: want %s, %s, %s or %s", c.Net, NetAuto, NetIPTables, NetProxy, NetDirect)
	}
	return nil
}

// Node is one node process of a Cluster and the addresses it keeps across restarts.
type Node struct {
	// ID is the node's id: n1, n2, ...
	ID string
	// Raft, Client and Admin are its listen addresses.
	Raft, Client, Admin string
	// Dir holds its logs, and its data directory and clock file unless it runs as its
	// own user (then they are in its home in the cluster's private folder).
	Dir string

	home string // holds the data directory and the clock file; "" for Dir

	proc   *Process // the latest process; nil before the first start
	args   []string // the latest process's flags, after "node"
	paused bool
	killed bool // the harness ended the latest process
	starts int  // processes started, for the log file names
}

// Process is the node's latest process, nil before it started: a test signals it or
// reads its pid. A process ended through it rather than through the Cluster counts as
// exited by itself for Unexpected.
func (n *Node) Process() *Process { return n.proc }

// Args are the flags the node's latest process was started with, after "node".
func (n *Node) Args() []string { return n.args }

// DataDir is the node's data directory.
func (n *Node) DataDir() string { return filepath.Join(n.homeDir(), "data") }

// ClockFile is the file whose duration offsets the node's batch clock.
func (n *Node) ClockFile() string { return filepath.Join(n.homeDir(), "clock") }

// homeDir is the folder of the node's data directory and clock file: its home when it
// runs as its own user, else Dir.
func (n *Node) homeDir() string {
	if n.home != "" {
		return n.home
	}
	return n.Dir
}

// LogPath is the log of the node's latest process.
func (n *Node) LogPath() string { return filepath.Join(n.Dir, fmt.Sprintf("node.%d.log", n.starts)) }

// Running reports whether the node's process is alive (paused or not).
func (n *Node) Running() bool { return n.proc != nil && n.proc.Running() }

// Cluster is a running cluster of node processes. Its methods are not safe for
// concurrent use: one goroutine (the nemesis) controls it.
type Cluster struct {
	cfg   ClusterConfig
	Nodes []*Node
	Net   Network
	// private is the iptables backend's private folder (nodeuser.go), "" on the proxy
	// backend; bin is the binary the nodes run (a copy in private, or cfg.Bin).
	private, bin string
	// certsDir holds the cluster's throw-away CA, node certificate and client root's
	// certificate (made by the binary's `cert` commands); tls is root's client config.
	certsDir string
	tls      *tls.Config
}

// StartCluster starts a bootstrapped cluster and waits until every node is ready. A port
// taken between choosing and binding makes it start again on new ports (three tries).
func StartCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	base := &Cluster{cfg: cfg, bin: cfg.Bin}
	certsParent := cfg.Dir
	if cfg.Net == NetIPTables {
		if err := IPTablesUsable(); err != nil {
			return nil, err
		}
		if err := base.makePrivate(); err != nil {
			return nil, err
		}
		certsParent = base.private
	}
	var err error
	switch {
	case cfg.Insecure:
	case cfg.CertsDir != "":
		base.certsDir = cfg.CertsDir
		base.tls, err = client.LoadTLS(cfg.CertsDir, "root")
	default:
		base.certsDir, base.tls, err = makeCerts(ctx, cfg.Bin, certsParent)
	}
	if err == nil && base.private != "" && !cfg.Insecure {
		err = shareCerts(base.certsDir)
	}
	if err != nil {
		base.removePrivate()
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		c, err := tryStart(ctx, base)
		if err == nil {
			return c, nil
		}
		if attempt == 3 || !errors.Is(err, ErrPortTaken) {
			base.removePrivate()
			return nil, err
		}
	}
}

// tryStart starts the nodes of a cluster like base (its configuration, certificates and
// private folder) on new ports.
func tryStart(ctx context.Context, base *Cluster) (*Cluster, error) {
	cfg := base.cfg
	addrs, err := freeAddrs(3 * cfg.Nodes)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, private: base.private, bin: base.bin, certsDir: base.certsDir, tls: base.tls}
	var raft, clientAddrs []string
	var ports [][]int
	for i := range cfg.Nodes {
		n := &Node{ID: fmt.Sprintf("n%d", i+1), Raft: addrs[3*i], Client: addrs[3*i+1], Admin: addrs[3*i+2],
			Dir: filepath.Join(cfg.Dir, fmt.Sprintf("n%d", i+1))}
		if c.private != "" {
			n.home = filepath.Join(c.private, n.ID)
		}
		for _, d := range []string{n.Dir, n.homeDir()} {
			if err := os.RemoveAll(d); err != nil {
				return nil, err
			}
		}
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			return nil, err
		}
		if c.private != "" {
			if err := makeHome(n.home, i); err != nil {
				return nil, err
			}
		}
		c.Nodes = append(c.Nodes, n)
		raft = append(raft, n.Raft)
		clientAddrs = append(clientAddrs, n.Client)
		var np []int
		for _, a := range []string{n.Raft, n.Client, n.Admin} {
			np = append(np, addrPort(a))
		}
		ports = append(ports, np)
	}
	switch cfg.Net {
	case NetIPTables:
		c.Net, err = NewIPTablesNet(ports, cfg.Clients)
	case NetDirect:
		c.Net = DirectNet{}
	default:
		c.Net, err = NewProxyNet(raft, clientAddrs, cfg.Clients)
	}
	if err != nil {
		return nil, err
	}
	var peers []string
	for _, n := range c.Nodes {
		peers = append(peers, n.ID+"="+n.Raft+"="+n.Client)
	}
	for i := range c.Nodes {
		if err := c.spawn(i, "--bootstrap", strings.Join(peers, ",")); err != nil {
			return nil, errors.Join(err, c.stop())
		}
	}
	for i := range c.Nodes {
		if err := c.WaitReady(ctx, i); err != nil {
			return nil, errors.Join(err, c.stop())
		}
	}
	return c, nil
}

// addrPort returns the port of a host:port address (0 if it has none).
func addrPort(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	return port
}

// spawn starts node i's process with the common flags and extra.
func (c *Cluster) spawn(i int, extra ...string) error {
	n := c.Nodes[i]
	if n.Running() {
		return fmt.Errorf("jepsen: %s is running already", n.ID)
	}
	n.starts++
	args := []string{"--id", n.ID, "--data", n.DataDir(), "--raft", n.Raft, "--client", n.Client,
		"--admin", n.Admin, "--partitions", fmt.Sprint(c.cfg.Partitions), "--log-level", c.cfg.LogLevel}
	if c.cfg.Insecure {
		args = append(args, "--insecure")
	} else {
		args = append(args, "--certs-dir", c.certsDir)
	}
	args = append(append(args, c.cfg.Args...), extra...)
	env := append(append(os.Environ(), c.cfg.Env...), c.Net.NodeEnv(i)...)
	if c.cfg.Net != NetDirect {
		env = append(env, faultenv.ClockFile+"="+n.ClockFile())
	}
	var attr *syscall.SysProcAttr
	if c.private != "" {
		attr = &syscall.SysProcAttr{Credential: nodeCredential(i)}
	}
	p, err := StartProcess(n.LogPath(), env, attr, c.bin, append(slices.Clone(c.cfg.NodeCommand), args...)...)
	if err != nil {
		return err
	}
	n.proc, n.args, n.paused, n.killed = p, args, false, false
	return nil
}

// WaitReady waits until node i answers /readyz with 200.
func (c *Cluster) WaitReady(ctx context.Context, i int) error {
	n := c.Nodes[i]
	if n.proc == nil {
		return fmt.Errorf("jepsen: %s was never started", n.ID)
	}
	if err := n.proc.WaitReady(ctx, n.Admin, c.tls, c.cfg.ReadyTimeout); err != nil {
		return fmt.Errorf("jepsen: %s %w", n.ID, err)
	}
	return nil
}

// Kill kills node i's process with SIGKILL and waits for it.
func (c *Cluster) Kill(i int) {
	n := c.Nodes[i]
	if !n.Running() {
		return
	}
	n.killed = true
	n.proc.Kill()
	n.paused = false
}

// Restart starts node i again on its data directory (after Kill) and waits until it is
// ready.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	if err := c.spawn(i); err != nil {
		return err
	}
	return c.WaitReady(ctx, i)
}

// Pause stops node i's process with SIGSTOP.
func (c *Cluster) Pause(i int) error {
	n := c.Nodes[i]
	if !n.Running() || n.paused {
		return nil
	}
	n.paused = true
	return n.proc.Signal(syscall.SIGSTOP)
}

// Resume continues a paused node with SIGCONT.
func (c *Cluster) Resume(i int) error {
	n := c.Nodes[i]
	if !n.Running() || !n.paused {
		return nil
	}
	n.paused = false
	return n.proc.Signal(syscall.SIGCONT)
}

// KillAll kills every node at once (power loss).
func (c *Cluster) KillAll() {
	for _, n := range c.Nodes {
		if n.Running() {
			n.killed = true
			n.proc.Cmd.Process.Kill()
		}
	}
	for i := range c.Nodes {
		c.Kill(i)
	}
}

// RestartAll starts every node that is not running and resumes every paused one, then
// waits until all are ready.
func (c *Cluster) RestartAll(ctx context.Context) error {
	for i, n := range c.Nodes {
		if n.Running() {
			if err := c.Resume(i); err != nil {
				return err
			}
			continue
		}
		if err := c.spawn(i); err != nil {
			return err
		}
	}
	for i := range c.Nodes {
		if err := c.WaitReady(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// Replace wipes node i: it is removed from the cluster (through the leader), killed, its
// data directory deleted, and a new process with the same id and addresses joins the
// running cluster as a new member. Node i must not be the leader.
func (c *Cluster) Replace(ctx context.Context, i int) error {
	cl, err := c.Client(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	n := c.Nodes[i]
	c.Kill(i)
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	err = cl.Cluster().RemoveMember(rctx, n.ID)
	cancel()
	if err != nil && !errors.Is(err, client.ErrUnknownMember) {
		return fmt.Errorf("jepsen: remove %s: %w", n.ID, err)
	}
	if err := os.RemoveAll(n.DataDir()); err != nil {
		return err
	}
	var join []string
	for j, m := range c.Nodes {
		if j != i {
			join = append(join, m.Client)
		}
	}
	if err := c.spawn(i, "--join", strings.Join(join, ",")); err != nil {
		return err
	}
	return c.WaitReady(ctx, i)
}

// SetClock makes node i's batch clock run offset from the wall clock (0 resets it).
func (c *Cluster) SetClock(i int, offset time.Duration) error {
	return os.WriteFile(c.Nodes[i].ClockFile(), []byte(offset.String()+"\n"), 0o644)
}

// Addrs returns the nodes' client addresses.
func (c *Cluster) Addrs() []string {
	var a []string
	for _, n := range c.Nodes {
		a = append(a, n.Client)
	}
	return a
}

// Client dials a client of the cluster with the harness's settings, reaching every node
// directly (the nemesis's and the checkers' client).
func (c *Cluster) Client(ctx context.Context) (*client.Client, error) {
	return c.dialClient(ctx, nil, nil)
}

// ClientWith is Client with tune, if not nil, adjusting the client's configuration
// before the dial.
func (c *Cluster) ClientWith(ctx context.Context, tune func(*client.Config)) (*client.Client, error) {
	return c.dialClient(ctx, nil, tune)
}

// WorkerClient dials worker w's client: it reaches each node as the Network's client
// endpoint w (w below ClusterConfig.Clients), so client faults apply to it. tune,
// if not nil, adjusts the client's configuration before the dial.
func (c *Cluster) WorkerClient(ctx context.Context, w int, tune func(*client.Config)) (*client.Client, error) {
	if w < 0 || w >= c.Net.Clients() {
		return nil, fmt.Errorf("jepsen: worker %d: the net has %d client endpoints", w, c.Net.Clients())
	}
	return c.dialClient(ctx, c.Net.ClientDial(w), tune)
}

func (c *Cluster) dialClient(ctx context.Context, dial func(context.Context, string) (net.Conn, error), tune func(*client.Config)) (*client.Client, error) {
	cfg := client.DefaultConfig()
	cfg.Dial = dial
	cfg.Addrs = c.Addrs()
	cfg.TLS, cfg.Insecure = c.tls, c.cfg.Insecure
	cfg.RequestTimeout = 2 * time.Second
	cfg.MaxRetries = 10
	if tune != nil {
		tune(&cfg)
	}
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return client.Dial(dctx, cfg)
}

// Unexpected returns the nodes whose latest process exited without the harness killing
// it, with the end of its log.
func (c *Cluster) Unexpected() []string {
	var out []string
	for _, n := range c.Nodes {
		if n.proc != nil && !n.Running() && !n.killed {
			log, _ := os.ReadFile(n.LogPath())
			out = append(out, fmt.Sprintf("%s exited: %s", n.ID, lastLines(log, 3)))
		}
	}
	return out
}

// Index returns the index of the node with id, -1 if none has it.
func (c *Cluster) Index(id string) int {
	for i, n := range c.Nodes {
		if n.ID == id {
			return i
		}
	}
	return -1
}

// Leader returns the index of the node the cluster names leader, -1 if none.
func (c *Cluster) Leader(ctx context.Context, cl *client.Client) int {
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	cs, err := cl.Cluster().Status(sctx)
	if err != nil {
		return -1
	}
	return c.Index(cs.Leader)
}

// Close kills every process (resuming paused ones first is not needed for SIGKILL),
// closes the Network (the proxies, or the iptables chain) and removes the private folder
// of the iptables backend unless ClusterConfig.KeepData. The error is the Network's.
func (c *Cluster) Close() error {
	err := c.stop()
	if c.cfg.KeepData && c.private != "" {
		os.Remove(c.bin) // the copy of the binary; the data stays
	} else {
		c.removePrivate()
	}
	return err
}

// stop kills every process and closes the Network.
func (c *Cluster) stop() error {
	c.KillAll()
	if c.Net != nil {
		return c.Net.Close()
	}
	return nil
}

// freeAddrs returns n loopback addresses whose ports were free a moment ago.
func freeAddrs(n int) ([]string, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var out []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	return out, nil
}

// lastLines returns the last k lines of b.
func lastLines(b []byte, k int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > k {
		lines = lines[len(lines)-k:]
	}
	return strings.Join(lines, "\n")
}
