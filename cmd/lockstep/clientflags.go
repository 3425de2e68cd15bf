package main

import (
	"github.com/lockstepdb/lockstep/client/profile"
	"github.com/lockstepdb/lockstep/node/runner"
	"github.com/urfave/cli/v2"
)

// Defaults of the admin commands' connection flags: a node's own defaults (node/runner).
const (
	defaultClientAddr = runner.DefaultClientAddr
	defaultAdminAddr  = runner.DefaultAdminAddr
	defaultTimeout    = profile.DefaultTimeout
)

// certsDirEnv names the environment variable that is the default of every --certs-dir.
const certsDirEnv = runner.CertsDirEnv

// contextFlag is the flag of the connection flags that names a context of the contexts
// file; applyContexts finds the commands that have it.
const contextFlag = "context"

// clientFlags are the connection flags of every command that talks to a cluster. Each one
// not given takes its environment variable, else the field of the context in use
// (applyContext), else its default: flag > environment > context > default.
func clientFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "addr", Aliases: []string{"a"}, Usage: "client address of a node; repeat or separate with commas for several",
			Value: cli.NewStringSlice(defaultClientAddr), EnvVars: []string{profile.EnvAddr}},
		&cli.DurationFlag{Name: "timeout", Usage: "give up after this long", Value: defaultTimeout, EnvVars: []string{profile.EnvTimeout}},
		&cli.StringFlag{Name: "cluster-id", Usage: "refuse nodes of another cluster (empty: any)", EnvVars: []string{profile.EnvClusterID}},
		&cli.StringFlag{Name: "certs-dir", Usage: "directory with ca.crt and client.USER.crt/.key (see lockstep cert)", EnvVars: []string{certsDirEnv}},
		&cli.StringFlag{Name: "user", Usage: "the client certificate to present: client.USER.crt in --certs-dir", Value: profile.DefaultUser, EnvVars: []string{profile.EnvUser}},
		&cli.BoolFlag{Name: "insecure", Usage: "connect in plaintext, to nodes started with --insecure (instead of --certs-dir)", EnvVars: []string{profile.EnvInsecure}},
		&cli.StringFlag{Name: contextFlag, Usage: "take the flags not given from this context of the contexts file (default: its current one; see lockstep context)",
			EnvVars: []string{profile.EnvContext}},
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
