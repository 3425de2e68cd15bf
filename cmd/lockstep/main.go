// Command lockstep runs Lockstep nodes and the embedded demo.
//
// It is an assembly script: each subcommand builds its components from flags, starts
// them, waits for a signal or for its work to end, and stops them in reverse order.
package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

func main() {
	app := &cli.App{
		Name:                 "lockstep",
		Usage:                "a replicated, deterministic-execution stream database",
		EnableBashCompletion: true,
		Commands:             []*cli.Command{nodeCommand(), demoCommand()},
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "lockstep:", err)
		os.Exit(1)
	}
}
