package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/clusterstatus"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/urfave/cli/v2"
)

func clusterCommand() *cli.Command {
	return &cli.Command{
		Name:  "cluster",
		Usage: "inspect the cluster, change its membership and its configuration",
		Subcommands: []*cli.Command{
			clusterStatusCommand(),
			clusterRecoverCommand(),
			clusterRestartCommand(),
			clusterConfigCommand(),
			clusterUpgradeCommand(),
			{
				Name:      "join",
				Usage:     "admit a new node (as a learner, promoted to voter once caught up)",
				ArgsUsage: "[ID]",
				Description: `Asks the leader to add a node. It enters as a learner (a Raft non-voter: it receives and
replays the log but does not count towards the quorum), and the leader promotes it to
voter once it has caught up; "cluster status" shows its role and progress. The node must be running already, started
with an empty data directory and neither --bootstrap nor --join (it then waits to be
admitted), with the procedure set and partition count of the cluster; the leader checks
both: the procedure fingerprint sent is this binary's built-in set, and the partition
count is the cluster's unless --partitions says otherwise. A node started with
"lockstep node --join ADDR,..." asks to join by itself and needs no "cluster join".

Example:
  lockstep node --id n4 --data /tmp/ls/n4 --raft 127.0.0.1:7004 --client 127.0.0.1:8004 --admin 127.0.0.1:9004 &
  lockstep cluster join --id n4 --raft 127.0.0.1:7004 --client 127.0.0.1:8004`,
				Flags: withClientFlags(
					&cli.StringFlag{Name: "id", Usage: "the new node's id (or give it as the argument)"},
					&cli.StringFlag{Name: "raft", Usage: "the new node's Raft address", Required: true},
					&cli.StringFlag{Name: "client", Usage: "the new node's client address", Required: true},
					&cli.IntFlag{Name: "partitions", Usage: "the new node's partition count (0: the cluster's)"},
					outputFlag(outputTable),
				),
				Action: runClusterJoin,
			},
			{
				Name:      "remove",
				Usage:     "remove a node from the cluster",
				ArgsUsage: "NODE",
				Description: `Asks the leader to remove the voter NODE (its id) from the Raft configuration and
the node registry. The removed node stops taking part; stop its process afterwards.
Removing a voter makes the majority smaller: keep an odd number of voters.

Example:
  lockstep cluster remove n3 --addr 127.0.0.1:8001`,
				Flags:  withClientFlags(outputFlag(outputTable)),
				Action: runClusterRemove,
			},
			{
				Name:      "transfer-leader",
				Usage:     "hand leadership to another node",
				ArgsUsage: "[NODE]",
				Description: `Asks the leader to hand leadership to the voter NODE (its id), or to any up-to-date
voter when NODE is omitted, and waits until a new leader is known. Useful before
stopping the leader for maintenance.

Example:
  lockstep cluster transfer-leader n2
  lockstep cluster transfer-leader --addr 127.0.0.1:8001,127.0.0.1:8002,127.0.0.1:8003`,
				Flags:  withClientFlags(outputFlag(outputTable)),
				Action: runTransferLeader,
			},
		},
	}
}

func runClusterJoin(c *cli.Context) error {
	id := c.String("id")
	switch {
	case c.NArg() > 1:
		return errors.New("cluster join takes at most one ID argument")
	case c.NArg() == 1 && id != "" && id != c.Args().First():
		return fmt.Errorf("cluster join: the argument %q and --id %q differ", c.Args().First(), id)
	case c.NArg() == 1:
		id = c.Args().First()
	case id == "":
		return errors.New("cluster join needs the new node's id: --id ID")
	}
	ctx, cl, done, err := adminCommand(c)
	if err != nil {
		return err
	}
	defer done()
	parts := c.Int("partitions")
	if parts == 0 {
		st, err := clusterstatus.First(ctx, cl, c.StringSlice("addr"))
		if err != nil {
			return err
		}
		parts = st.Partitions
	}
	// The node's incarnation, so the leader can refuse it if it replaced a member's data,
	// and its build target (this binary's if it does not answer), which must be the leader's.
	inc, build := "", node.BuildTarget()
	if st, err := cl.Status(ctx, c.String("client")); err == nil && st.NodeID == id {
		inc = st.Incarnation
		if st.Build != "" {
			build = st.Build
		}
	}
	err = cl.Cluster().AddMember(ctx, client.JoinRequest{ID: id, RaftAddr: c.String("raft"), ClientAddr: c.String("client"),
		Partitions: parts, Procedures: procedures.Builtins().Fingerprint(), Incarnation: inc, Build: build})
	if err != nil {
		return fmt.Errorf("join %s: %w", id, err)
	}
	return printDone(c, map[string]any{"joined": id, "raft": c.String("raft"), "client": c.String("client"), "suffrage": "learner"},
		"%s joined as a learner (raft %s, client %s); it catches up from the leader and is promoted to voter when caught up", id, c.String("raft"), c.String("client"))
}

func runClusterRemove(c *cli.Context) error {
	if c.NArg() != 1 || c.Args().First() == "" {
		return errors.New("cluster remove needs exactly one NODE id")
	}
	id := c.Args().First()
	return adminDo(c, func(ctx context.Context, cl *client.Client) error {
		return cl.Cluster().RemoveMember(ctx, id) // it names the removal ("client: remove n4: ...")
	}, map[string]any{"removed": id}, "removed %s from the cluster", id)
}

func runTransferLeader(c *cli.Context) error {
	if c.NArg() > 1 {
		return errors.New("cluster transfer-leader takes at most one NODE id")
	}
	target := c.Args().First()
	ctx, cl, done, err := adminCommand(c)
	if err != nil {
		return err
	}
	defer done()
	addrs := c.StringSlice("addr")
	st, err := clusterstatus.First(ctx, cl, addrs)
	if err != nil {
		return err
	}
	old := st.LeaderID
	if target != "" && target == old {
		return printDone(c, map[string]any{"from": old, "to": target, "moved": false}, "%s leads already", target)
	}
	if err := cl.Cluster().TransferLeadership(ctx, target); err != nil {
		return err // it names the transfer ("client: transfer leadership to n2: ...")
	}
	next, err := clusterstatus.WaitNewLeader(ctx, cl, addrs, old, st.Term)
	if err != nil {
		return fmt.Errorf("leadership transfer from %s acknowledged, but no new leader seen: %w", old, err)
	}
	if next == old { // it moved and came back (the target handed it off: docs/operations.md)
		return printDone(c, map[string]any{"from": old, "to": next, "moved": true}, "leadership moved from %s and came back to it in a new term", old)
	}
	return printDone(c, map[string]any{"from": old, "to": next, "moved": true}, "leadership moved from %s to %s", old, next)
}
