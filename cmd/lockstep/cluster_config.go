package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/lockstepdb/lockstep/client"
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
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	ctx, cl, done, err := adminCommand(c)
	if err != nil {
		return err
	}
	defer done()
	conf, err := cl.Cluster().Config(ctx)
	if err != nil {
		return fmt.Errorf("cluster config get: %w", err)
	}
	return writeClusterConfig(c.App.Writer, format, conf)
}

func runClusterConfigSet(c *cli.Context) error {
	if c.NArg() == 0 {
		return errors.New("cluster config set needs at least one NAME=VALUE")
	}
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	var set []client.Setting
	for _, arg := range c.Args().Slice() {
		s, err := client.ParseSetting(arg)
		if err != nil {
			return fmt.Errorf("cluster config set: %w", err)
		}
		set = append(set, s)
	}
	ctx, cl, done, err := adminCommand(c)
	if err != nil {
		return err
	}
	defer done()
	conf, err := cl.Cluster().SetConfig(ctx, set...)
	if err != nil {
		return fmt.Errorf("cluster config set: %w", err)
	}
	return writeClusterConfig(c.App.Writer, format, conf)
}

func writeClusterConfig(w io.Writer, format string, conf client.ClusterConfig) error {
	if format == outputJSON {
		return writeJSON(w, conf)
	}
	tw := newTable(w)
	fmt.Fprintf(tw, "version\t%d\n", conf.Version)
	fmt.Fprintf(tw, "index\t%d\n", conf.Index)
	for _, s := range conf.Settings {
		fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.Value)
	}
	return tw.Flush()
}
