package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/urfave/cli/v2"
)

// The users and grants commands (docs/security.md, Roles). They need the admin role.

func userCommand() *cli.Command {
	return &cli.Command{
		Name:  "user",
		Usage: "manage the cluster's users and their roles (admin only)",
		Description: `A user is the common name of a client certificate ("lockstep cert create-client NAME")
with one role, kept in the cluster's replicated state so that every node enforces it:
  admin   membership, leadership, users and grants, and everything below
  writer  invoke every procedure (or only those granted: see "lockstep grant"), append
  reader  read-only procedures at any consistency, stream reads and subscriptions
The user root is always admin and cannot be changed. A certificate whose name is not a
user may do nothing; a node certificate may only make the calls nodes make.`,
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "add a user with a role",
				ArgsUsage: "NAME",
				Description: `Adds the user NAME with --role admin, writer or reader.

Example:
  lockstep cert create-client --certs-dir certs alice
  lockstep user add alice --role writer`,
				Flags:  withClientFlags(&cli.StringFlag{Name: "role", Usage: "admin, writer or reader", Required: true}, outputFlag(outputTable)),
				Action: runUserAdd,
			},
			{
				Name:      "remove",
				Usage:     "remove a user",
				ArgsUsage: "NAME",
				Description: `Removes the user NAME: its certificate may do nothing from then on (connections open
already are refused at their next request).

Example:
  lockstep user remove alice`,
				Flags:  withClientFlags(outputFlag(outputTable)),
				Action: runUserRemove,
			},
			{
				Name:  "list",
				Usage: "list the users, their roles and grants",
				Description: `Lists the users: name, role and, for a writer limited by grants, the procedures it
may invoke. Read through the log, so it shows every change acknowledged before.

Example:
  lockstep user list --output json`,
				Flags:  withClientFlags(outputFlag(outputTable)),
				Action: runUserList,
			},
		},
	}
}

func grantCommand() *cli.Command {
	return &cli.Command{
		Name:      "grant",
		Usage:     "limit a writer to listed procedures, or grant it more (admin only)",
		ArgsUsage: "NAME PROC...",
		Description: `A writer may invoke every procedure until it is granted some: from then on it may
invoke only the procedures granted (and read-only ones). "*" as PROC lets it invoke
every procedure again. Every PROC must be a procedure of the cluster.

Example:
  lockstep grant alice kv.put kv.delete
  lockstep grant alice '*'`,
		Flags:  withClientFlags(outputFlag(outputTable)),
		Action: func(c *cli.Context) error { return runGrant(c, true) },
	}
}

func revokeCommand() *cli.Command {
	return &cli.Command{
		Name:      "revoke",
		Usage:     "take granted procedures from a limited writer (admin only)",
		ArgsUsage: "NAME PROC...",
		Description: `Takes the procedures PROC from the writer NAME's grants; "*" takes all of them, so
that it may invoke read-only procedures only. A writer not limited by grants must first
be limited ("lockstep revoke NAME '*'", then "lockstep grant NAME PROC...").

Example:
  lockstep revoke alice kv.delete`,
		Flags:  withClientFlags(outputFlag(outputTable)),
		Action: func(c *cli.Context) error { return runGrant(c, false) },
	}
}

func runUserAdd(c *cli.Context) error {
	if c.NArg() != 1 {
		return errors.New("user add needs exactly one NAME")
	}
	name := c.Args().First()
	role, err := client.ParseUserRole(c.String("role"))
	if err != nil {
		return fmt.Errorf("user add %s: %w", name, err)
	}
	return adminDo(c, func(ctx context.Context, cl *client.Client) error {
		return wrap(cl.Users().Add(ctx, name, role), "user add %s", name)
	}, map[string]any{"added": name, "role": string(role)}, "added user %s with role %s", name, role)
}

func runUserRemove(c *cli.Context) error {
	if c.NArg() != 1 {
		return errors.New("user remove needs exactly one NAME")
	}
	name := c.Args().First()
	return adminDo(c, func(ctx context.Context, cl *client.Client) error {
		return wrap(cl.Users().Remove(ctx, name), "user remove %s", name)
	}, map[string]any{"removed": name}, "removed user %s", name)
}

func runUserList(c *cli.Context) error {
	return adminShow(c, "user list", func(ctx context.Context, cl *client.Client) ([]client.User, error) {
		return cl.Users().List(ctx)
	}, cliout.Users)
}

func runGrant(c *cli.Context, grant bool) error {
	verb, call := "revoke", client.Users.Revoke
	if grant {
		verb, call = "grant", client.Users.Grant
	}
	if c.NArg() < 2 {
		return fmt.Errorf("%s needs a NAME and at least one PROC", verb)
	}
	name, procs := c.Args().First(), c.Args().Slice()[1:]
	return adminDo(c, func(ctx context.Context, cl *client.Client) error {
		return wrap(call(cl.Users(), ctx, name, procs...), "%s %s", verb, name)
	}, map[string]any{"user": name, verb: procs}, "%s %s: %s", verb, name, strings.Join(procs, " "))
}

// wrap returns err prefixed with what format and args say, or nil.
func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}
