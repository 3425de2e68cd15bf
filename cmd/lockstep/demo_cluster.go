package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/node"
	"github.com/urfave/cli/v2"
)

// startDemoCluster checks the flags both workloads share, starts the embedded cluster
// (secure, with a throw-away CA in its temp dir) and dials a client of it that retries
// without limit. The caller closes both. quiet is the nodes' logger, which discards.
func startDemoCluster(ctx context.Context, c *cli.Context, out io.Writer) (cluster *node.LocalCluster, cl *client.Client, quiet *slog.Logger, err error) {
	nodes := c.Int("nodes")
	if nodes < 1 || c.Duration("duration") <= 0 || c.Int("clients") < 1 {
		return nil, nil, nil, errors.New("demo: --nodes, --duration and --clients must be positive")
	}
	fmt.Fprintf(out, "starting a %d-node cluster (Raft over loopback, fsynced logs in a temp dir)...\n", nodes)
	quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
	startCtx, startCancel := context.WithTimeout(ctx, 30*time.Second)
	defer startCancel()
	cfg := node.Config{Logger: quiet}
	cfg.Replica.Partitions = c.Int("partitions")
	cluster, err = node.StartLocalCluster(startCtx, node.LocalClusterOptions{Nodes: nodes, Node: cfg})
	if err != nil {
		return nil, nil, nil, err
	}
	ccfg := cluster.ClientConfig() // the cluster's throw-away CA and client root
	ccfg.MaxRetries = -1
	if cl, err = client.Dial(ctx, ccfg); err != nil {
		cluster.Close()
		return nil, nil, nil, err
	}
	return cluster, cl, quiet, nil
}
