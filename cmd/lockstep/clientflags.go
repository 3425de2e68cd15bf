package main

import (
	"time"

	"github.com/lockstepdb/lockstep/node/runner"
	"github.com/urfave/cli/v2"
)

// Defaults of the admin commands' connection flags: a node's own defaults (node/runner).
const (
	defaultClientAddr = runner.DefaultClientAddr
	defaultAdminAddr  = runner.DefaultAdminAddr
	defaultTimeout    = 5 * time.Second
)

// certsDirEnv names the environment variable that is the default of every --certs-dir.
const certsDirEnv = runner.CertsDirEnv

// clientFlags are the connection flags of every admin command.
func clientFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "addr", Aliases: []string{"a"}, Usage: "client address of a node; repeat or separate with commas for several",
			Value: cli.NewStringSlice(defaultClientAddr)},
		&cli.DurationFlag{Name: "timeout", Usage: "give up after this long", Value: defaultTimeout},
		&cli.StringFlag{Name: "cluster-id", Usage: "refuse nodes of another cluster (empty: any)"},
		&cli.StringFlag{Name: "certs-dir", Usage: "directory with ca.crt and client.USER.crt/.key (see lockstep cert)", EnvVars: []string{certsDirEnv}},
		&cli.StringFlag{Name: "user", Usage: "the client certificate to present: client.USER.crt in --certs-dir", Value: "root", EnvVars: []string{"LOCKSTEP_USER"}},
		&cli.BoolFlag{Name: "insecure", Usage: "connect in plaintext, to nodes started with --insecure (instead of --certs-dir)"},
	}
}

// outputFlag is the --output flag of commands that print data.
func outputFlag(def string) cli.Flag {
	return &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "table or json", Value: def}
}

// withClientFlags returns flags followed by the connection flags.
func withClientFlags(flags ...cli.Flag) []cli.Flag {
	return append(flags, clientFlags()...)
}
