package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/urfave/cli/v2"
)

// The deployment commands (docs/procedures.md, Deploying and upgrading): glue over
// client.Deployment, client.Activate and the module calls, printed by deployRun
// (cluster_upgrade.go) and cliout.Module.

func deployCommand() *cli.Command {
	return &cli.Command{
		Name:      "deploy",
		Usage:     "deploy Starlark modules, or show or switch the running code (admin only)",
		ArgsUsage: "FILE.star",
		Description: `"lockstep deploy app.star" deploys the Starlark module in app.star (named "app", or
--name) through the log: the leader compiles and checks it, and every node runs its
procedures and processors from the same log index on. Deploying a module again replaces
it (a new version); "deploy remove" stops it; "deploy show" prints its source and
history. Modules need cluster version 3 (lockstep cluster upgrade 3).

Compiled-in procedures are registered as name@N; a binary may carry several versions of
one. Which version runs is replicated: "deploy activate" switches it at one log index on
every node, and replay runs each entry with the version active at its index. Roll out
binaries that carry the new version first: the leader refuses an activation, by node,
unless every member carries it.

Examples:
  lockstep deploy app.star
  lockstep deploy --name counts app.star
  lockstep deploy show app
  lockstep deploy remove app`,
		Flags: withClientFlags(outputFlag(outputTable),
			&cli.StringFlag{Name: "name", Usage: "module name (default: the file's name without its extension)"}),
		Action: runDeployModule,
		Subcommands: []*cli.Command{
			{
				Name:   "list",
				Usage:  "show the cluster version, the running registrations and the modules",
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
			{
				Name:      "remove",
				Usage:     "remove a module: its procedures and processors stop, at one log index",
				ArgsUsage: "NAME",
				Flags:     withClientFlags(outputFlag(outputTable)),
				Action:    runDeployRemove,
			},
			{
				Name:      "show",
				Usage:     "print a module's source and version history",
				ArgsUsage: "NAME",
				Flags:     withClientFlags(outputFlag(outputTable)),
				Action:    runDeployShow,
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

func runDeployModule(c *cli.Context) error {
	if c.NArg() != 1 {
		return errors.New("deploy needs one FILE.star (or a command: list, activate, remove, show)")
	}
	file := c.Args().First()
	source, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	name := c.String("name")
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	return deployRun(c, "deploy "+file, func(ctx context.Context, cl *client.Client) (client.Deployment, error) {
		return cl.Procedures().DeployModule(ctx, name, source)
	})
}

func runDeployRemove(c *cli.Context) error {
	if c.NArg() != 1 {
		return errors.New("deploy remove needs one module NAME")
	}
	return deployRun(c, "deploy remove", func(ctx context.Context, cl *client.Client) (client.Deployment, error) {
		return cl.Procedures().RemoveModule(ctx, c.Args().First())
	})
}

func runDeployShow(c *cli.Context) error {
	if c.NArg() != 1 {
		return errors.New("deploy show needs one module NAME")
	}
	return adminShow(c, "deploy show", func(ctx context.Context, cl *client.Client) (client.Module, error) {
		return cl.Procedures().Module(ctx, c.Args().First())
	}, func(w io.Writer, format string, m client.Module) error {
		if format == outputJSON {
			return writeJSON(w, m)
		}
		return cliout.Module(w, m)
	})
}
