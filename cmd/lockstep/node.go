package main

import (
	"log/slog"

	"github.com/lockstepdb/lockstep/node/runner"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/urfave/cli/v2"
)

// nodeCommand is `lockstep node`: the node runner's command (node/runner) with the
// built-in procedures.
func nodeCommand() *cli.Command {
	return runner.Command("lockstep", func(string) *procedures.Registry { return procedures.Builtins() })
}

// newLogger is the logger of a command's --log-format and --log-level, as a node's.
func newLogger(format, level string) (*slog.Logger, error) {
	return runner.NewLogger(format, level)
}
