package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/lockstepdb/lockstep/client/profile"
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/urfave/cli/v2"
)

// contextCommand is `lockstep context`: the contexts file (package client/profile).
func contextCommand() *cli.Command {
	return &cli.Command{
		Name:  "context",
		Usage: "named connection settings (addresses, certificates, user): set, use, list, show, delete",
		Description: `A context names the connection flags of a cluster, so that commands need none of them:
lockstep context set prod --addr n1:8001,n2:8001 --certs-dir /etc/lockstep/certs --user alice
lockstep context use prod
lockstep cluster status          # uses prod's addresses, certificates and user

Each connection flag a command is not given comes from its environment variable
(LOCKSTEP_ADDR, LOCKSTEP_TIMEOUT, LOCKSTEP_CLUSTER_ID, LOCKSTEP_CERTS_DIR, LOCKSTEP_USER,
LOCKSTEP_INSECURE), else from the context in use (--context or LOCKSTEP_CONTEXT, else the
file's current one), else its default: flag > environment > context > default. A
variable that is set but empty counts as unset.
--certs-dir and --insecure count as one setting: either one on the command line or in the
environment leaves the context's unused.

The file is YAML at $LOCKSTEP_CONFIG, else $XDG_CONFIG_HOME/lockstep/contexts.yaml, else
~/.config/lockstep/contexts.yaml, written whole with mode 0600.`,
		Subcommands: []*cli.Command{contextSetCommand(), contextUseCommand(), contextListCommand(), contextShowCommand(), contextDeleteCommand()},
	}
}

func contextSetCommand() *cli.Command {
	return &cli.Command{
		Name:      "set",
		Usage:     "create or change a context: the flags given replace its fields, the others stay",
		ArgsUsage: "NAME",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "addr", Aliases: []string{"a"}, Usage: "client addresses of the cluster's nodes"},
			&cli.DurationFlag{Name: "timeout", Usage: "the commands' --timeout"},
			&cli.StringFlag{Name: "cluster-id", Usage: "refuse nodes of another cluster"},
			&cli.StringFlag{Name: "certs-dir", Usage: "directory with ca.crt and client.USER.crt/.key"},
			&cli.StringFlag{Name: "user", Usage: "the client certificate to present"},
			&cli.BoolFlag{Name: "insecure", Usage: "connect in plaintext (replaces --certs-dir)"},
			&cli.BoolFlag{Name: "use", Usage: "make it the current context too"},
			outputFlag(outputTable),
		},
		Action: func(c *cli.Context) error {
			name, err := oneContextName(c, "set")
			if err != nil {
				return err
			}
			if c.Duration("timeout") < 0 {
				return fmt.Errorf("--timeout %v: want a positive duration", c.Duration("timeout"))
			}
			s := profile.Settings{Addrs: c.StringSlice("addr"), Timeout: c.Duration("timeout"), ClusterID: c.String("cluster-id"),
				CertsDir: c.String("certs-dir"), User: c.String("user"), Insecure: c.Bool("insecure")}
			if s.CertsDir != "" && s.Insecure {
				return errors.New("--certs-dir and --insecure: give one of them")
			}
			return editContexts(c, func(f *profile.File) error {
				if err := f.Set(name, s); err != nil {
					return err
				}
				if c.Bool("use") {
					return f.Use(name)
				}
				return nil
			}, name)
		},
	}
}

func contextUseCommand() *cli.Command {
	return &cli.Command{
		Name:      "use",
		Usage:     "make a context the current one",
		ArgsUsage: "NAME",
		Flags:     []cli.Flag{outputFlag(outputTable)},
		Action: func(c *cli.Context) error {
			name, err := oneContextName(c, "use")
			if err != nil {
				return err
			}
			return editContexts(c, func(f *profile.File) error { return f.Use(name) }, name)
		},
	}
}

func contextDeleteCommand() *cli.Command {
	return &cli.Command{
		Name:      "delete",
		Usage:     "remove a context",
		ArgsUsage: "NAME",
		Flags:     []cli.Flag{outputFlag(outputTable)},
		Action: func(c *cli.Context) error {
			name, err := oneContextName(c, "delete")
			if err != nil {
				return err
			}
			return editContexts(c, func(f *profile.File) error { return f.Delete(name) }, "")
		},
	}
}

func contextListCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list the contexts; * marks the current one",
		Flags: []cli.Flag{outputFlag(outputTable)},
		Action: func(c *cli.Context) error {
			f, _, err := loadContextsFile()
			if err != nil {
				return err
			}
			return cliout.Contexts(c.App.Writer, c.String("output"), cliout.ContextRows(f, ""))
		},
	}
}

func contextShowCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "show a context's settings (default: the current one's)",
		ArgsUsage: "[NAME]",
		Flags:     []cli.Flag{outputFlag(outputTable)},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return errors.New("context show takes at most one NAME")
			}
			f, path, err := loadContextsFile()
			if err != nil {
				return err
			}
			s, name, err := f.Selected(c.Args().First())
			if err != nil {
				return fmt.Errorf("%w (in %s)", err, path)
			}
			if name == "" {
				return fmt.Errorf("%w: no current context in %s (lockstep context use NAME)", profile.ErrUnknownContext, path)
			}
			return cliout.Contexts(c.App.Writer, c.String("output"), []cliout.ContextRow{cliout.NewContextRow(name, name == f.Current, s)})
		},
	}
}

func oneContextName(c *cli.Context, cmd string) (string, error) {
	if c.NArg() != 1 {
		return "", fmt.Errorf("context %s needs exactly one NAME", cmd)
	}
	return c.Args().First(), profile.CheckName(c.Args().First())
}

func loadContextsFile() (*profile.File, string, error) { return profile.LoadDefault(os.Getenv) }

// editContexts edits the contexts file (profile.Edit), then shows context show (or, for
// "", the list).
func editContexts(c *cli.Context, edit func(*profile.File) error, show string) error {
	path, err := contextsPath()
	if err != nil {
		return err
	}
	f, err := profile.Edit(path, edit)
	if err != nil {
		return err
	}
	return cliout.Contexts(c.App.Writer, c.String("output"), cliout.ContextRows(f, show))
}
