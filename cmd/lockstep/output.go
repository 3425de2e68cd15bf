package main

import (
	"io"
	"text/tabwriter"

	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/urfave/cli/v2"
)

// The two output formats of --output (internal/cliout renders them).
const (
	outputTable = cliout.Table
	outputJSON  = cliout.JSON
)

// outputFormat returns the command's --output value, checked.
func outputFormat(c *cli.Context) (string, error) { return cliout.Format(c.String("output")) }

// writeJSON writes v as indented JSON and a newline.
func writeJSON(w io.Writer, v any) error { return cliout.WriteJSON(w, v) }

// newTable returns a tabwriter for aligned columns; Flush it when done.
func newTable(w io.Writer) *tabwriter.Writer { return cliout.NewTable(w) }

// printDone reports what a command did: the sentence of format and args for --output
// table, v as JSON for --output json (prepareCommands checks --output before the action).
func printDone(c *cli.Context, v any, format string, args ...any) error {
	return cliout.Done(c.App.Writer, c.String("output"), v, format, args...)
}
