package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/urfave/cli/v2"
)

// The cluster configuration commands (docs/operations.md, Cluster configuration): glue
// over client.ClusterConfig and client.SetClusterConfig. They need the admin role.

func clusterConfigCommand() *cli.Command {
	return &cli.Command{
		Name:  "config",
		Usage: "show or change the cluster's replicated configuration (admin only)",
		Description: `The settings every node must apply alike, because they decide replicated results:
session-ttl, session-window, max-cached-result-bytes, max-sessions, max-result-bytes,
processor-budget and processor-budget-per-append, and from cluster version 4 the Starlark
module budgets module-max-steps, module-max-elements, module-max-value-bytes and
module-max-int-bits. They are replicated state: the flags of
the node that creates the cluster give their initial values, and from then on they change
only through the log ("cluster config set"), at one log index on every node. A node's own
flags of these names do not override them.`,
		Subcommands: []*cli.Command{
			{
				Name:  "get",
				Usage: "show the configuration",
				Description: `Shows every setting, the configuration's version (its number of changes, 1 for the
values the cluster was created with) and the log index of its last change. Read through
the log, so it shows every change acknowledged before.

Example:
  lockstep cluster config get --output json`,
				Flags:  withClientFlags(outputFlag(outputTable)),
				Action: runClusterConfigGet,
			},
			{
				Name:      "set",
				Usage:     "change settings, all at one log index",
				ArgsUsage: "NAME=VALUE...",
				Description: `Changes the settings given, all or none, through the log: every node applies the new
values from the same log index on. session-ttl takes a Go duration ("90s", at least 1s);
the others a decimal integer. An unknown name or a value out of range is refused and
nothing changes.

Example:
  lockstep cluster config set processor-budget=2048 max-result-bytes=2097152`,
				Flags:  withClientFlags(outputFlag(outputTable)),
				Action: runClusterConfigSet,
			},
		},
	}
}

func runClusterConfigGet(c *cli.Context) error {
	if c.NArg() != 0 {
		return errors.New("cluster config get takes no arguments")
	}
	return adminShow(c, "cluster config get", func(ctx context.Context, cl *client.Client) (client.ClusterConfig, error) {
		return cl.Cluster().Config(ctx)
	}, cliout.ClusterConfig)
}

func runClusterConfigSet(c *cli.Context) error {
	if c.NArg() == 0 {
		return errors.New("cluster config set needs at least one NAME=VALUE")
	}
	var set []client.Setting
	for _, arg := range c.Args().Slice() {
		s, err := client.ParseSetting(arg)
		if err != nil {
			return fmt.Errorf("cluster config set: %w", err)
		}
		set = append(set, s)
	}
	return adminShow(c, "cluster config set", func(ctx context.Context, cl *client.Client) (client.ClusterConfig, error) {
		return cl.Cluster().SetConfig(ctx, set...)
	}, cliout.ClusterConfig)
}
