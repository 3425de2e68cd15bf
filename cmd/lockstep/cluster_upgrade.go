package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/urfave/cli/v2"
)

// The cluster version and deployment commands (docs/operations.md, Upgrading a cluster;
// docs/procedures.md, Deploying and upgrading): glue over client.UpgradeCluster,
// client.Activate and client.Deployment. They need the admin role.

func clusterUpgradeCommand() *cli.Command {
	return &cli.Command{
		Name:      "upgrade",
		Usage:     "move the cluster version forward once every node's binary supports it (admin only)",
		ArgsUsage: "VERSION",
		Description: `The cluster version decides every replicated behaviour of the product. It moves forward
only through the log: the leader asks every member which cluster versions its binary runs
and refuses, naming the node and its range, unless all of them run VERSION. Until then
the nodes keep the old behaviour, whatever binary they run. There is no downgrade past an
activated version.

Roll out the new binary one node at a time first, then:
  lockstep cluster upgrade 2`,
		Flags:  withClientFlags(outputFlag(outputTable)),
		Action: runClusterUpgrade,
	}
}

func runClusterUpgrade(c *cli.Context) error {
	if c.NArg() != 1 {
		return errors.New("cluster upgrade takes one VERSION")
	}
	v, err := strconv.ParseUint(c.Args().First(), 10, 64)
	if err != nil || v == 0 {
		return fmt.Errorf("cluster upgrade: %q is not a cluster version (1, 2, ...)", c.Args().First())
	}
	return deployRun(c, "cluster upgrade", func(ctx context.Context, cl *client.Client) (client.Deployment, error) {
		return cl.Cluster().Upgrade(ctx, v)
	})
}

// deployRun runs one deployment command and prints the deployment it answers with.
func deployRun(c *cli.Context, what string, call func(context.Context, *client.Client) (client.Deployment, error)) error {
	return adminShow(c, what, call, cliout.Deployment)
}
