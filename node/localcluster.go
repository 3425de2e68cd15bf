package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/certs"
	"github.com/lockstepdb/lockstep/procedures"
)

// LocalCluster is a cluster of nodes inside this process: real Raft over TCP on loopback
// with OS-chosen ports and real fsynced logs on disk. The demo, the benchmarks and the
// tests use it; it is no stand-in, only a way to start several nodes at once.
type LocalCluster struct {
	// Nodes holds the running nodes by index; nil where a node is stopped.
	Nodes []*Node
	cfgs  []Config
	reg   func(i int) *procedures.Registry
	dir   string
	owned bool // dir is a temp dir the cluster removes on Close
	// certsDir holds the cluster's certificates; tls is the client configuration of
	// client "root" from it. Both empty for an insecure cluster.
	certsDir string
	tls      *tls.Config
}

// LocalClusterOptions configure StartLocalCluster.
type LocalClusterOptions struct {
	// Nodes is the number of voters. Default 3.
	Nodes int
	// Dir holds one data directory per node; empty means a new temp dir, removed by Close.
	Dir string
	// Node is the template of every node's config; ID, DataDir, addresses and Bootstrap
	// are set per node. Unless it sets CertsDir or Insecure, the cluster is secure with
	// throw-away certificates: a new CA, a node certificate for the loopback addresses and
	// a certificate of client "root", in DIR/certs (see CertsDir and ClientConfig).
	Node Config
	// Registry returns node i's procedures. Default: procedures.Builtins for every node.
	Registry func(i int) *procedures.Registry
	// Configure, when set, adjusts node i's config (a copy of Node with the per-node fields
	// set) before the node first starts; restarts reuse the result. Tests use it to give
	// each node its own Sequencer.Dial, to cut its Raft links.
	Configure func(i int, cfg *Config)
}

// StartLocalCluster starts and bootstraps a new cluster and waits until it has a leader
// ready to take requests, or ctx ends.
func StartLocalCluster(ctx context.Context, opts LocalClusterOptions) (*LocalCluster, error) {
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.Registry == nil {
		opts.Registry = func(int) *procedures.Registry { return procedures.Builtins() }
	}
	c := &LocalCluster{reg: opts.Registry, dir: opts.Dir}
	if c.dir == "" {
		dir, err := os.MkdirTemp("", "lockstep-cluster-")
		if err != nil {
			return nil, err
		}
		c.dir, c.owned = dir, true
	}
	if err := c.setupCerts(&opts.Node); err != nil {
		c.Close()
		return nil, err
	}
	var peers []Peer
	for i := 0; i < opts.Nodes; i++ {
		cfg := opts.Node
		cfg.ID = fmt.Sprintf("n%d", i+1)
		cfg.DataDir = filepath.Join(c.dir, cfg.ID)
		cfg.RaftAddr, cfg.ClientAddr, cfg.Bootstrap = "127.0.0.1:0", "127.0.0.1:0", nil
		if opts.Configure != nil {
			opts.Configure(i, &cfg)
		}
		n, err := Start(cfg, opts.Registry(i))
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("start %s: %w", cfg.ID, err)
		}
		// Restarts reuse the addresses the OS chose.
		cfg.RaftAddr, cfg.ClientAddr = n.RaftAddr(), n.ClientAddr()
		c.Nodes = append(c.Nodes, n)
		c.cfgs = append(c.cfgs, cfg)
		peers = append(peers, Peer{ID: cfg.ID, RaftAddr: cfg.RaftAddr, ClientAddr: cfg.ClientAddr})
	}
	for i := range c.cfgs {
		c.cfgs[i].Bootstrap = nil
	}
	if err := c.Nodes[0].Bootstrap(peers); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := c.WaitLeader(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// setupCerts creates the cluster's throw-away certificates if tmpl asks for neither
// certificates nor insecure mode, and loads the client configuration of "root".
func (c *LocalCluster) setupCerts(tmpl *Config) error {
	if tmpl.Insecure {
		return nil
	}
	if tmpl.CertsDir == "" {
		tmpl.CertsDir = filepath.Join(c.dir, "certs")
		if err := certs.CreateLoopback(tmpl.CertsDir, "root"); err != nil {
			return err
		}
	}
	cfg, err := client.LoadTLS(tmpl.CertsDir, "root")
	if err != nil {
		return fmt.Errorf("local cluster: %w", err)
	}
	c.certsDir, c.tls = tmpl.CertsDir, cfg
	return nil
}

// CertsDir returns the directory of the cluster's certificates (ca.crt, node.crt,
// client.root.crt and their keys); "" for an insecure cluster.
func (c *LocalCluster) CertsDir() string { return c.certsDir }

// ClientConfig returns a client configuration for the cluster: every node's client
// address and the TLS configuration of client "root" (or Insecure for an insecure
// cluster). Callers add their own settings.
func (c *LocalCluster) ClientConfig() client.Config {
	return client.Config{Addrs: c.ClientAddrs(), TLS: c.tls, Insecure: c.tls == nil}
}

// ClientAddrs returns every node's client address, stopped nodes included.
func (c *LocalCluster) ClientAddrs() []string {
	out := make([]string, len(c.cfgs))
	for i, cfg := range c.cfgs {
		out[i] = cfg.ClientAddr
	}
	return out
}

// Leader returns the index of the node that leads and takes requests, or -1.
func (c *LocalCluster) Leader() int {
	for i, n := range c.Nodes {
		if n != nil && n.leading() {
			return i
		}
	}
	return -1
}

// WaitLeader waits until some node leads and takes requests, and returns its index.
func (c *LocalCluster) WaitLeader(ctx context.Context) (int, error) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if i := c.Leader(); i >= 0 {
			return i, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("no leader: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// Kill stops node i at once, with no hand-off of leadership; its data directory stays.
func (c *LocalCluster) Kill(i int) {
	if c.Nodes[i] != nil {
		c.Nodes[i].Close()
		c.Nodes[i] = nil
	}
}

// Restart starts the stopped node i again on its data directory and addresses: it
// replays its log and catches up from the leader.
//
// Its ports were chosen by the OS from the ephemeral range, so while it was down any
// outgoing connection on the machine may have taken one as its local port: Restart tries
// again for restartBindWait while an address is in use, and then fails with that error.
func (c *LocalCluster) Restart(i int) error {
	if c.Nodes[i] != nil {
		return fmt.Errorf("node %s is running", c.cfgs[i].ID)
	}
	deadline := time.Now().Add(restartBindWait)
	for {
		n, err := Start(c.cfgs[i], c.reg(i))
		if err == nil {
			c.Nodes[i] = n
			return nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// RebuildNode does what the owner of node i owes it once it announced a rebuild
// (Node.RebuildRequested): it closes the node, prepares its data directory
// (PrepareRebuild) and starts it again, to join the cluster as a new incarnation that
// installs a healthy replica's snapshot. It fails if no rebuild was announced.
func (c *LocalCluster) RebuildNode(i int) error {
	n := c.Nodes[i]
	if n == nil {
		return fmt.Errorf("node %s is stopped", c.cfgs[i].ID)
	}
	select {
	case <-n.RebuildRequested():
	default:
		return fmt.Errorf("node %s announced no rebuild", c.cfgs[i].ID)
	}
	c.Kill(i)
	cfg, err := PrepareRebuild(c.cfgs[i], n.RebuildPlan())
	if err != nil {
		return err
	}
	c.cfgs[i] = cfg
	return c.Restart(i)
}

// restartBindWait is how long Restart waits for a node's address to be free again.
const restartBindWait = 10 * time.Second

// WaitConverged waits until every running node has applied the same log index with equal
// partition hashes (DESIGN.md invariant 1), and returns those hashes.
func (c *LocalCluster) WaitConverged(ctx context.Context) ([]uint64, error) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		hashes, err := c.converged()
		if err == nil {
			return hashes, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", err, ctx.Err())
		case <-t.C:
		}
	}
}

var errNotConverged = errors.New("replicas differ")

func (c *LocalCluster) converged() ([]uint64, error) {
	var hashes []uint64
	var applied uint64
	for _, n := range c.Nodes {
		if n == nil {
			continue
		}
		a, h := n.fsm.Applied(), n.fsm.Engine().Hashes()
		if hashes == nil {
			hashes, applied = h, a
			continue
		}
		if a != applied || !slices.Equal(h, hashes) {
			return nil, fmt.Errorf("%w: node %s at %d has %x, others at %d %x", errNotConverged, n.cfg.ID, a, h, applied, hashes)
		}
	}
	return hashes, nil
}

// AddNode starts a new node with an empty data directory that joins the cluster through
// its running members, and returns its index. reg is its procedure set (nil: the
// cluster's). It does not wait for the join to complete.
func (c *LocalCluster) AddNode(reg *procedures.Registry) (int, error) {
	i := len(c.cfgs)
	cfg := c.cfgs[0]
	cfg.ID = fmt.Sprintf("n%d", i+1)
	cfg.DataDir = filepath.Join(c.dir, cfg.ID)
	cfg.RaftAddr, cfg.ClientAddr = "127.0.0.1:0", "127.0.0.1:0"
	for j, n := range c.Nodes {
		if n != nil {
			cfg.Join = append(cfg.Join, c.cfgs[j].ClientAddr)
		}
	}
	if reg == nil {
		reg = c.reg(i)
	}
	n, err := Start(cfg, reg)
	if err != nil {
		return -1, err
	}
	cfg.RaftAddr, cfg.ClientAddr, cfg.Join = n.RaftAddr(), n.ClientAddr(), nil
	c.Nodes = append(c.Nodes, n)
	c.cfgs = append(c.cfgs, cfg)
	return i, nil
}

// Close stops every node and removes the data directories the cluster created.
func (c *LocalCluster) Close() {
	for i := range c.Nodes {
		c.Kill(i)
	}
	if c.owned {
		os.RemoveAll(c.dir)
	}
}
