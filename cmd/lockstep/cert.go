package main

import (
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/internal/certs"
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/urfave/cli/v2"
)

// certCommand is `lockstep cert`: the cluster's certificates, made with crypto/x509 the
// way `cockroach cert` makes them (internal/certs).
func certCommand() *cli.Command {
	dirFlag := func() cli.Flag {
		return &cli.StringFlag{Name: "certs-dir", Usage: "the certificates directory", Required: true, EnvVars: []string{certsDirEnv}}
	}
	createFlags := func(lifetimeHelp string) []cli.Flag {
		return []cli.Flag{dirFlag(),
			&cli.DurationFlag{Name: "lifetime", Usage: "how long the certificate is valid (" + lifetimeHelp + ")"},
			&cli.BoolFlag{Name: "overwrite", Usage: "replace existing files"},
			outputFlag(outputTable),
		}
	}
	opts := func(c *cli.Context) certs.Options {
		return certs.Options{Lifetime: c.Duration("lifetime"), Overwrite: c.Bool("overwrite")}
	}
	return &cli.Command{
		Name:  "cert",
		Usage: "create and list the cluster's certificates",
		Description: `Every node and client of a secure cluster holds a certificate of the cluster's CA:

  lockstep cert create-ca --certs-dir certs              ca.crt, ca.key
  lockstep cert create-node --certs-dir certs HOST...    node.crt, node.key
  lockstep cert create-client --certs-dir certs NAME     client.NAME.crt, client.NAME.key
  lockstep cert list --certs-dir certs

A node certificate names every host (IP address or DNS name) the node is reached at.
Give each node a directory with ca.crt, its node.crt and node.key; give each client
ca.crt and its client certificate. Keep ca.key away from the nodes. Keys are written
with mode 0600. See docs/security.md.`,
		Subcommands: []*cli.Command{
			{
				Name:      "create-ca",
				Usage:     "create the cluster's certificate authority: ca.crt and ca.key",
				ArgsUsage: " ",
				Flags:     createFlags("default 10 years"),
				Action: func(c *cli.Context) error {
					if err := noArgs(c); err != nil {
						return err
					}
					return reportWritten(c, certs.CreateCA(c.String("certs-dir"), opts(c)), certs.CAFile, certs.CAKeyFile)
				},
			},
			{
				Name:      "create-node",
				Usage:     "create node.crt and node.key for the hosts the node is reached at",
				ArgsUsage: "HOST...",
				Flags:     createFlags("default 5 years, at most the CA's"),
				Action: func(c *cli.Context) error {
					if c.NArg() == 0 {
						return fmt.Errorf("create-node: give the node's hosts (IP addresses or DNS names)")
					}
					return reportWritten(c, certs.CreateNode(c.String("certs-dir"), c.Args().Slice(), opts(c)), certs.NodeCertFile, certs.NodeKeyFile)
				},
			},
			{
				Name:      "create-client",
				Usage:     "create client.NAME.crt and client.NAME.key; NAME is the client's identity",
				ArgsUsage: "NAME",
				Flags:     createFlags("default 5 years, at most the CA's"),
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return fmt.Errorf("create-client: give one client name")
					}
					name := c.Args().First()
					return reportWritten(c, certs.CreateClient(c.String("certs-dir"), name, opts(c)), certs.ClientCertFile(name), certs.ClientKeyFile(name))
				},
			},
			{
				Name:      "list",
				Usage:     "list the certificates of a directory and check them",
				ArgsUsage: " ",
				Flags:     []cli.Flag{dirFlag(), outputFlag(outputTable)},
				Action:    listCerts,
			},
		},
	}
}

// noArgs refuses positional arguments for commands that take none.
func noArgs(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("%s takes no arguments, got %q", c.Command.Name, strings.Join(c.Args().Slice(), " "))
	}
	return nil
}

// reportWritten prints the files written, or returns err.
func reportWritten(c *cli.Context, err error, files ...string) error {
	if err != nil {
		return err
	}
	return printDone(c, map[string]any{"dir": c.String("certs-dir"), "files": files},
		"wrote %s in %s", strings.Join(files, " and "), c.String("certs-dir"))
}

// listCerts prints one line per certificate; it fails if one is unusable.
func listCerts(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	infos, err := certs.List(c.String("certs-dir"))
	if err != nil {
		return err
	}
	bad, err := cliout.Certs(c.App.Writer, c.String("output"), infos)
	if err == nil && bad > 0 {
		err = fmt.Errorf("%d of %d certificates are not usable", bad, len(infos))
	}
	return err
}
