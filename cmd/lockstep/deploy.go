package main

import (
	"context"
	"errors"

	"github.com/lockstepdb/lockstep/client"
	"github.com/urfave/cli/v2"
)

// The deployment commands (docs/procedures.md, Deploying and upgrading): glue over
// client.Deployment and client.Activate, printed by deployRun (cluster_upgrade.go).

func deployCommand() *cli.Command {
	return &cli.Command{
		Name:  "deploy",
		Usage: "show or switch the running versions of compiled-in procedures (admin only)",
		Description: `Procedures are registered as name@N; a binary may carry several versions of one. Which
version runs is replicated: "deploy activate" switches it at one log index on every
node, and replay runs each entry with the version active at its index. Roll out binaries
that carry the new version first: the leader refuses an activation, by node, unless
every member carries it.`,
		Subcommands: []*cli.Command{
			{
				Name:   "list",
				Usage:  "show the cluster version and the running registrations",
				Flags:  withClientFlags(outputFlag(outputTable)),
				Action: runDeployList,
			},
			{
				Name:      "activate",
				Usage:     "make registrations the running versions, at one log index",
				ArgsUsage: "NAME@N...",
				Description: `Example:
  lockstep deploy activate clicks.count@2`,
				Flags:  withClientFlags(outputFlag(outputTable)),
				Action: runDeployActivate,
			},
		},
	}
}

func runDeployList(c *cli.Context) error {
	if c.NArg() != 0 {
		return errors.New("deploy list takes no arguments")
	}
	return deployRun(c, "deploy list", func(ctx context.Context, cl *client.Client) (client.Deployment, error) {
		return cl.Procedures().Deployment(ctx)
	})
}

func runDeployActivate(c *cli.Context) error {
	if c.NArg() == 0 {
		return errors.New("deploy activate needs at least one NAME@N")
	}
	return deployRun(c, "deploy activate", func(ctx context.Context, cl *client.Client) (client.Deployment, error) {
		return cl.Procedures().Activate(ctx, c.Args().Slice()...)
	})
}
