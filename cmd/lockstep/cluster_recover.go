package main

import (
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/urfave/cli/v2"
)

func clusterRecoverCommand() *cli.Command {
	return &cli.Command{
		Name:  "recover",
		Usage: "rewrite a stopped node's membership after the cluster lost its quorum for good (offline)",
		Description: `For a cluster that has lost a majority of its voters for good: Raft cannot elect a
leader, and no online command can change the membership. Run this on each surviving node,
while it is stopped, with the same --members (the survivors): it replays the node's
snapshot and log into a fresh state machine, writes a snapshot whose configuration has
--members as the only voters (entries in the survivor's log that were not known to be
committed become committed), and compacts the log. Then start the survivors as before;
they elect a leader among themselves. Add new nodes with --join to grow the cluster back.
Acknowledged inputs survive if a survivor has them: recover the survivor(s) with the
longest log (highest last index in "cluster status" before they stopped, or try each).
Step by step: docs/operations.md, "Recovering from lost quorum".

Example, a three-node cluster where only n1 survived:
  lockstep cluster recover --data /var/lib/lockstep/n1 --members n1=10.0.0.1:7001`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data", Usage: "the stopped node's data directory", Required: true},
			&cli.StringFlag{Name: "id", Usage: "the node's id (default: from the data directory's identity)"},
			&cli.StringSliceFlag{Name: "members", Usage: "the voters after recovery, ID=RAFTADDR,... (this node among them)", Required: true},
			&cli.IntFlag{Name: "partitions", Usage: "the cluster's partition count", Value: node.DefaultPartitions},
			&cli.StringFlag{Name: "cluster-id", Usage: "the cluster's id (default: from the data directory's identity)"},
			outputFlag(outputTable),
		},
		Action: runClusterRecover,
	}
}

func runClusterRecover(c *cli.Context) error {
	var members []node.Peer
	for _, part := range c.StringSlice("members") {
		f := strings.Split(strings.TrimSpace(part), "=")
		if (len(f) != 2 && len(f) != 3) || f[0] == "" || f[1] == "" {
			return fmt.Errorf("member %q: want ID=RAFTADDR", part)
		}
		members = append(members, node.Peer{ID: f[0], RaftAddr: f[1]})
	}
	cfg := node.Config{ID: c.String("id"), DataDir: c.String("data"), ClusterID: c.String("cluster-id")}
	cfg.Replica.Partitions = c.Int("partitions")
	log, err := newLogger("text", "warn")
	if err != nil {
		return err
	}
	cfg.Logger = log
	id, err := node.Recover(cfg, procedures.Builtins(), members)
	if err != nil {
		return err
	}
	var ids []string
	for _, m := range members {
		ids = append(ids, m.ID)
	}
	return printDone(c, map[string]any{"recovered": id, "data": cfg.DataDir, "voters": ids},
		"recovered node %s in %s: the voters are now %s; start the node as before", id, cfg.DataDir, strings.Join(ids, ", "))
}
