package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/lockstepdb/lockstep/internal/sqlshell"
	"github.com/urfave/cli/v2"
)

// lockstep sql (docs/sql.md, "Surfaces"): glue over internal/sqlshell, which runs a
// script (-e, -f) statement by statement, or the shell.

// sqlTimeout is lockstep sql's default --timeout: a node's first SQL statement starts its
// parser (libpg_query as WebAssembly), which takes seconds on a loaded machine.
const sqlTimeout = time.Minute

func sqlCommand() *cli.Command {
	flags := withClientFlags(outputFlag(outputTable),
		&cli.StringFlag{Name: "e", Usage: "run the statements of this text"},
		&cli.StringFlag{Name: "f", Usage: "run the statements of this file (- for standard input)"},
		&cli.BoolFlag{Name: "read-any", Usage: "answer queries from the state of any node (possibly stale)"},
		&cli.StringFlag{Name: "history", Usage: "the shell's history file (default ~/.lockstep_sql_history)"})
	for _, f := range flags {
		if d, ok := f.(*cli.DurationFlag); ok && d.Name == "timeout" {
			d.Value = sqlTimeout
		}
	}
	return &cli.Command{
		Name:  "sql",
		Usage: "run SQL: deploy streams, tables and views, insert rows, query views",
		Description: `Without -e or -f, an interactive shell: statements end with ';', line editing and a
history file (~/.lockstep_sql_history). Each statement runs on its own: CREATE deploys
one stream, table or view through the log (admin), INSERT appends rows through the
exactly-once session, DROP removes, SELECT, SHOW STREAMS|TABLES|VIEWS and EXPLAIN answer
from state (linearizable; --read-any for any node's state).

Examples:
  lockstep sql -e "CREATE STREAM clicks (usr text, n bigint) WITH (key = 'usr')"
  lockstep sql -e "INSERT INTO clicks VALUES ('u1', 3)"
  lockstep sql -f pipeline.sql
  lockstep sql -o json -e "SELECT * FROM per_user ORDER BY n DESC LIMIT 10"`,
		Flags:  flags,
		Action: runSQL,
	}
}

func runSQL(c *cli.Context) error {
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	if c.NArg() != 0 {
		return errors.New("sql takes no arguments: give statements with -e or -f, or none for the shell")
	}
	if d := c.Duration("timeout"); d <= 0 { // it bounds each statement
		return fmt.Errorf("--timeout %v: want a positive duration", d)
	}
	cl, err := openClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	r := &sqlshell.Runner{Client: cl, Format: format, Out: c.App.Writer, ErrOut: c.App.ErrWriter, Context: c.Context,
		Timeout: c.Duration("timeout"), ReadAny: c.Bool("read-any"), History: c.String("history")}
	switch {
	case c.IsSet("e"):
		return r.Script(c.String("e"), true)
	case c.String("f") != "":
		var b []byte
		if c.String("f") == "-" {
			b, err = io.ReadAll(os.Stdin)
		} else {
			b, err = os.ReadFile(c.String("f"))
		}
		if err != nil {
			return fmt.Errorf("sql: %w", err)
		}
		return r.Script(string(b), true)
	}
	if r.History == "" {
		if home, err := os.UserHomeDir(); err == nil {
			r.History = filepath.Join(home, ".lockstep_sql_history")
		}
	}
	return r.Shell()
}
