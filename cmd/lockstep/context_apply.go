package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/lockstepdb/lockstep/client/profile"
	"github.com/urfave/cli/v2"
)

// prepareCommands makes every command check its --output value, and every command with
// the connection flags (clientFlags) apply the context in use (applyContext), before its
// action does anything.
func prepareCommands(cmds []*cli.Command) {
	for _, cmd := range cmds {
		prepareCommands(cmd.Subcommands)
		output, conn := hasFlag(cmd.Flags, "output"), hasFlag(cmd.Flags, contextFlag)
		if !output && !conn {
			continue
		}
		before := cmd.Before
		cmd.Before = func(c *cli.Context) error {
			if output {
				if _, err := outputFormat(c); err != nil {
					return err
				}
			}
			if conn {
				if err := applyContext(c); err != nil {
					return err
				}
			}
			if before != nil {
				return before(c)
			}
			return nil
		}
	}
}

func hasFlag(flags []cli.Flag, name string) bool {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}

// contextsPath returns the contexts file's path (profile.DefaultPath).
func contextsPath() (string, error) { return profile.DefaultPath(os.Getenv) }

// applyContext gives each connection flag that neither the command line nor the
// environment set the value of the context in use: --context (or $LOCKSTEP_CONTEXT), else
// the file's current context. The security choice is one setting: a --certs-dir or
// --insecure from the command line or the environment leaves the context's both unused.
func applyContext(c *cli.Context) error {
	name := c.String(contextFlag)
	path, err := contextsPath()
	if err != nil {
		if name == "" {
			return nil // no file to look in, and none asked for
		}
		return fmt.Errorf("--context %s: %w", name, err)
	}
	f, err := profile.Load(path)
	if err != nil {
		return err
	}
	ctx, name, err := f.Selected(name)
	if err != nil {
		return fmt.Errorf("--context: %w (in %s)", err, path)
	}
	if name == "" {
		return nil
	}
	var have profile.Settings
	if c.IsSet("addr") {
		have.Addrs = c.StringSlice("addr")
	}
	if c.IsSet("timeout") {
		have.Timeout = c.Duration("timeout")
	}
	if c.IsSet("user") {
		have.User = c.String("user")
	}
	have.ClusterID = c.String("cluster-id")
	fill, err := profile.Fill(have, c.IsSet("certs-dir") || c.IsSet("insecure"), ctx)
	if err != nil {
		return fmt.Errorf("context %q: %w", name, err)
	}
	var timeout, insecure string
	if fill.Timeout > 0 {
		timeout = fill.Timeout.String()
	}
	if fill.Insecure {
		insecure = "true"
	}
	for _, kv := range [][2]string{{"addr", strings.Join(fill.Addrs, ",")}, {"timeout", timeout}, {"cluster-id", fill.ClusterID},
		{"user", fill.User}, {"certs-dir", fill.CertsDir}, {"insecure", insecure}} {
		if kv[1] == "" || c.IsSet(kv[0]) {
			continue
		}
		if err := c.Set(kv[0], kv[1]); err != nil {
			return fmt.Errorf("context %q: %s: %w", name, kv[0], err)
		}
	}
	return nil
}
