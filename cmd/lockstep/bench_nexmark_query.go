package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/loadgen"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark/nexbench"
	"github.com/lockstepdb/lockstep/client"
	"github.com/urfave/cli/v2"
)

// runNexmarkQuery runs --query on the cluster of --nodes, --addr or --embedded and
// prints nexbench's report.
func runNexmarkQuery(ctx context.Context, c *cli.Context, spec nexmarkSpec) error {
	var clients []*client.Client
	var nodes []nexbench.Node
	if spec.nodes > 0 {
		bin, err := os.Executable()
		if err != nil {
			return err
		}
		dir, err := os.MkdirTemp("", "lockstep-nexmark-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		startCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cl, err := nexbench.StartCluster(startCtx, nexbench.ClusterOptions{Bin: bin, Nodes: spec.nodes, Partitions: c.Int("partitions"),
			Query: spec.query, OutOfOrderness: spec.feed.OutOfOrderness(), Dir: dir, CPUProfile: c.String("node-cpuprofile")})
		if err != nil {
			return err
		}
		defer cl.Close() //nolint:errcheck // the run's own errors come first
		for range spec.feed.Workers {
			cc, err := cl.Client(startCtx)
			if err != nil {
				loadgen.Close(clients)
				return err
			}
			clients = append(clients, cc)
		}
		defer loadgen.Close(clients)
		nodes = cl.Nodes()
	} else {
		cs, closeAll, err := openNexmarkTarget(ctx, c, spec)
		if err != nil {
			return err
		}
		defer closeAll()
		clients = cs
		for _, pid := range c.IntSlice("node-pid") {
			nodes = append(nodes, nexbench.Node{ID: fmt.Sprintf("pid %d", pid), Pid: pid})
		}
	}
	stopProfile, err := startCPUProfile(c.String("cpuprofile"))
	if err != nil {
		return err
	}
	defer stopProfile() //nolint:errcheck // the run's own errors come first
	rep, runErr := nexbench.Run(ctx, nexbench.Config{Query: spec.query, Feed: spec.feed, Clients: clients, Nodes: nodes,
		DrainTimeout: c.Duration("timeout"), Check: c.Bool("check")})
	if rep.Query == "" { // refused before it started
		return runErr
	}
	if f := c.String("chart"); f != "" {
		if err := os.WriteFile(f, rep.Chart(), 0o644); err != nil && runErr == nil {
			runErr = err
		}
	}
	if spec.format == outputJSON {
		if err := writeJSON(c.App.Writer, rep); err != nil {
			return err
		}
	} else if err := rep.WriteTable(c.App.Writer); err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("bench nexmark %s: %w", spec.query, runErr)
	}
	return nil
}
