package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/node"
)

// demoCluster is the embedded cluster of a run and the client that drives it.
type demoCluster struct {
	*node.LocalCluster
	cl    *client.Client
	quiet *slog.Logger // the nodes' logger, which discards
}

// startCluster starts the embedded cluster (secure, with a throw-away CA in its temp dir)
// and dials a client of it that retries without limit. The caller closes it.
func startCluster(ctx context.Context, cfg Config, out io.Writer) (*demoCluster, error) {
	fmt.Fprintf(out, "starting a %d-node cluster (Raft over loopback, fsynced logs in a temp dir)...\n", cfg.Nodes)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	startCtx, startCancel := context.WithTimeout(ctx, 30*time.Second)
	defer startCancel()
	ncfg := node.Config{Logger: quiet}
	ncfg.Replica.Partitions = cfg.Partitions
	cluster, err := node.StartLocalCluster(startCtx, node.LocalClusterOptions{Nodes: cfg.Nodes, Node: ncfg})
	if err != nil {
		return nil, err
	}
	ccfg := cluster.ClientConfig() // the cluster's throw-away CA and client root
	ccfg.MaxRetries = -1
	cl, err := client.Dial(ctx, ccfg)
	if err != nil {
		cluster.Close()
		return nil, err
	}
	return &demoCluster{LocalCluster: cluster, cl: cl, quiet: quiet}, nil
}

// close closes the client, then the cluster.
func (c *demoCluster) close() {
	c.cl.Close()
	c.LocalCluster.Close()
}

// killLeaderHalfway, with cfg.Kill and more than one node, kills the leader halfway
// through cfg.Duration in a goroutine, unless ctx ends first. The restart it returns,
// called once the workload is over (after ctx ended), waits for that goroutine and
// restarts the node killed, if any.
func (c *demoCluster) killLeaderHalfway(ctx context.Context, cfg Config, out io.Writer) (restart func() error) {
	killed := -1
	var wg sync.WaitGroup
	if cfg.Kill && cfg.Nodes > 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			killed = c.killHalfway(ctx, out, cfg.Duration)
		}()
	}
	return func() error {
		wg.Wait()
		if killed < 0 {
			return nil
		}
		if err := c.Restart(killed); err != nil {
			return fmt.Errorf("restart n%d: %w", killed+1, err)
		}
		fmt.Fprintf(out, "restarted n%d: it replays its log and catches up\n", killed+1)
		return nil
	}
}

func (c *demoCluster) killHalfway(ctx context.Context, out io.Writer, d time.Duration) int {
	select {
	case <-ctx.Done():
		return -1
	case <-time.After(d / 2):
	}
	// Between elections no node leads for a moment: wait for one rather than skip the kill.
	leader, err := c.WaitLeader(ctx)
	if err != nil {
		return -1
	}
	start := time.Now()
	c.Kill(leader)
	fmt.Fprintf(out, "\nkilled the leader n%d (no hand-off)\n", leader+1)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if next, err := c.WaitLeader(wctx); err == nil {
		fmt.Fprintf(out, "n%d took over after %s\n", next+1, time.Since(start).Round(time.Millisecond))
	}
	return leader
}

// lockedWriter serializes the writes of the demo's goroutines to one output.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
