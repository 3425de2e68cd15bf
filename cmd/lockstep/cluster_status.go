package main

import (
	"github.com/lockstepdb/lockstep/internal/clusterstatus"
	"github.com/urfave/cli/v2"
)

func clusterStatusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show every node: role, term, log indexes, lag, partition state hashes, divergence, uptime",
		Description: `Asks the nodes at --addr for their status, and every member they name, and prints one row
per node: id, role (Leader, Follower, Candidate, or learner for a new node that replays
the log before the leader promotes it to voter), term, last log index, applied index, lag (log entries the node
has applied fewer than the leader), readiness, divergence, partition count,
uptime, addresses, version; then, from the leader, each learner's catch-up progress
("learner n4: catching up: applied 5120 of 90000 (6%)"); then each partition's state hash on every node. One reachable
address is enough.

After printing, it checks the cluster's health and says on stderr what is wrong.
Exit codes (when several hold, the first in this list; docs/cli.md has every command's):
  0  healthy: a leader, every member answered, ready and not divergent
  1  the command failed (bad flags, no output), as every lockstep command
  2  no leader: no node that answered leads or knows a leader
  3  a replica is divergent (its state differs from its peers')
  4  a member did not answer (unreachable)
  5  a member is not ready for another reason (catching up, incompatible, ...)

Examples:
  lockstep cluster status --addr 127.0.0.1:8001,127.0.0.1:8002,127.0.0.1:8003
  lockstep cluster status --output json`,
		Flags:  withClientFlags(outputFlag(outputTable)),
		Action: runClusterStatus,
	}
}

func runClusterStatus(c *cli.Context) error {
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	ctx, cl, done, err := adminCommand(c)
	if err != nil {
		return err
	}
	defer done()
	cs, err := clusterstatus.Gather(ctx, cl)
	if err != nil {
		return err
	}
	if format == outputJSON {
		err = writeJSON(c.App.Writer, cs)
	} else {
		err = clusterstatus.WriteTable(c.App.Writer, cs)
	}
	if err != nil {
		return err
	}
	return cs.Health()
}
