package main

import (
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/lockstepdb/lockstep/internal/invoke"
	"github.com/urfave/cli/v2"
)

func proceduresCommand() *cli.Command {
	return &cli.Command{
		Name:  "procedures",
		Usage: "list the procedures: arguments, result, partitioning, read-only flag",
		Description: `Lists procedures with the JSON shape of their arguments as "lockstep invoke --args"
takes them, their result type, whether they run on one partition (with --key) or several
(a barrier, optionally scoped by --keys), and whether they are read-only.

Without --addr it lists the procedures this binary's "lockstep node" runs (the
built-ins) and needs no running node. With --addr it lists those the cluster runs, as a
node describes them: custom procedures of a program that embeds Lockstep included,
which "lockstep invoke" can call too.

Example:
  lockstep procedures
  lockstep procedures --output json
  lockstep procedures --addr 127.0.0.1:7401`,
		Flags:  withClientFlags(outputFlag(outputTable)),
		Action: runProcedures,
	}
}

func runProcedures(c *cli.Context) error {
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	list := invoke.Builtins()
	if c.IsSet("addr") {
		if list, err = clusterCatalog(c); err != nil {
			return err
		}
	}
	return cliout.Procedures(c.App.Writer, format, list)
}

// clusterCatalog asks the cluster at --addr for its procedures.
func clusterCatalog(c *cli.Context) ([]client.Procedure, error) {
	ctx, cl, done, err := adminCommand(c)
	if err != nil {
		return nil, err
	}
	defer done()
	list, err := cl.Procedures().Catalog(ctx)
	if err != nil {
		return nil, fmt.Errorf("procedures of the cluster at %s: %w", strings.Join(c.StringSlice("addr"), ","), err)
	}
	return list, nil
}
