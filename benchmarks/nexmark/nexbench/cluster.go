package nexbench

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark/goqueries"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/jepsen"
	"github.com/lockstepdb/lockstep/procedures"
)

// NodeCommand is the lockstep binary's hidden command that runs a bench node.
var NodeCommand = []string{"bench", "nexmark-node"}

// Registry returns the procedure set of a bench node: the built-ins and query q's
// processors with cfg (none for q ""), or the error of goqueries.Register.
func Registry(q string, cfg goqueries.Config) (func(nodeID string) *procedures.Registry, error) {
	if q == "" {
		return func(string) *procedures.Registry { return procedures.Builtins() }, nil
	}
	if err := goqueries.Register(procedures.Builtins(), cfg, q); err != nil {
		return nil, err
	}
	return func(string) *procedures.Registry {
		r := procedures.Builtins()
		_ = goqueries.Register(r, cfg, q) // checked above on an identical registry
		return r
	}, nil
}

// ClusterOptions describes a cluster StartCluster starts.
type ClusterOptions struct {
	// Bin is the lockstep binary (its hidden bench node command runs each node).
	Bin string
	// Nodes (1 to 9) and Partitions (default 4) size the cluster.
	Nodes, Partitions int
	// Engine is EngineGo (default: the nodes are bench nodes carrying Query's processors
	// with OutOfOrderness) or EngineSQL (plain `lockstep node` processes: Run deploys the
	// query; bench nodes carrying nothing when CPUProfile is set, for its flag).
	Engine         string
	Query          string
	OutOfOrderness time.Duration
	// Dir holds the nodes' data, logs and certificates.
	Dir string
	// CPUProfile, if set, makes each node write a CPU profile of its whole run to
	// CPUProfile + "-" + its id + ".pprof".
	CPUProfile string
}

// Cluster is a running cluster of bench node processes.
type Cluster struct {
	jc *jepsen.Cluster
}

// StartCluster starts opts.Nodes bench node processes, bootstrapped together, with mutual
// TLS (throw-away certificates) and fsync on (the node's default), and waits until they
// are ready.
func StartCluster(ctx context.Context, opts ClusterOptions) (*Cluster, error) {
	cmd, args := NodeCommand, []string{"--nexmark-query", opts.Query, "--nexmark-out-of-orderness", opts.OutOfOrderness.String()}
	if opts.Engine == EngineSQL {
		cmd, args = []string{"node"}, nil
		if opts.CPUProfile != "" {
			cmd = NodeCommand
		}
	}
	if opts.CPUProfile != "" {
		args = append(args, "--nexmark-cpuprofile", opts.CPUProfile)
	}
	jc, err := jepsen.StartCluster(ctx, jepsen.ClusterConfig{Bin: opts.Bin, NodeCommand: cmd, Nodes: opts.Nodes,
		Partitions: opts.Partitions, Dir: opts.Dir, Net: jepsen.NetDirect, LogLevel: "warn",
		Args: args})
	if err != nil {
		return nil, fmt.Errorf("nexbench: starting %d bench nodes: %w", opts.Nodes, err)
	}
	return &Cluster{jc: jc}, nil
}

// Client returns a new client of the cluster. It retries a request for up to about a
// minute (the harness's 2 s request timeout, 60 retries with backoff up to 1 s), so
// that a run rides out a leader election on a loaded machine instead of failing.
func (c *Cluster) Client(ctx context.Context) (*client.Client, error) {
	return c.jc.ClientWith(ctx, func(cfg *client.Config) { cfg.MaxRetries = 60 })
}

// Nodes returns the nodes' ids, process ids and data directories, for Run.
func (c *Cluster) Nodes() []Node {
	var out []Node
	for _, n := range c.jc.Nodes {
		out = append(out, Node{ID: n.ID, Pid: n.Process().Pid(), DataDir: n.DataDir()})
	}
	return out
}

// Close stops the nodes: SIGTERM, so that each shuts down cleanly (and writes its CPU
// profile), then SIGKILL for one that has not within 10 s.
func (c *Cluster) Close() error {
	var wg sync.WaitGroup
	for _, n := range c.jc.Nodes {
		if p := n.Process(); p != nil {
			wg.Add(1)
			go func() { defer wg.Done(); p.Stop(10 * time.Second) }()
		}
	}
	wg.Wait()
	return c.jc.Close()
}

// Node is a node process Run measures.
type Node struct {
	ID      string
	Pid     int    // 0: not known (a cluster at --addr)
	DataDir string // "": not known
}

// diskBytes returns the disk space the regular files under dir take (allocated blocks:
// a preallocated WAL segment counts what it has written, not its length).
func diskBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				if st, ok := info.Sys().(*syscall.Stat_t); ok {
					n += st.Blocks * 512
				} else {
					n += info.Size()
				}
			}
		}
		return nil
	})
	return n
}
