package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// printDone reports what a command did: the sentence of format and args for --output
// table, v as JSON for --output json (applyContexts checks --output before the action).
func printDone(c *cli.Context, v any, format string, args ...any) error {
	if c.String("output") == outputJSON {
		return writeJSON(c.App.Writer, v)
	}
	_, err := fmt.Fprintf(c.App.Writer, format+"\n", args...)
	return err
}
