package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chzyer/readline"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/urfave/cli/v2"
)

// lockstep sql (docs/sql.md, "Surfaces"): glue over client.SQL. A script (-e, -f) is split
// into statements (sql.SplitStatements), each run with SQL.Exec; the shell reads lines
// until a ';' ends a statement. Errors are printed at their line and column of the script.

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
	cl, err := openClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	r := &sqlRunner{c: c, cl: cl, format: format, w: c.App.Writer}
	switch {
	case c.IsSet("e"):
		return r.script(c.String("e"), true)
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
		return r.script(string(b), true)
	}
	return r.shell()
}

type sqlRunner struct {
	c      *cli.Context
	cl     *client.Client
	format string
	w      io.Writer
}

// script runs every statement of text; with stop, the first error ends it.
func (r *sqlRunner) script(text string, stop bool) error {
	stmts, _ := sql.SplitStatements(text)
	for _, st := range stmts {
		if err := r.statement(st); err != nil {
			if stop {
				return err
			}
			fmt.Fprintln(r.c.App.ErrWriter, "error:", oneLine(err.Error()))
		}
	}
	return nil
}

func (r *sqlRunner) statement(st sql.Statement) error {
	ctx, cancel, err := commandContext(r.c)
	if err != nil {
		return err
	}
	defer cancel()
	var opts []client.QueryOption
	if r.c.Bool("read-any") {
		opts = append(opts, client.WithReadAny())
	}
	var res client.ExecResult
	if cmd, perr := sql.ParseCommand(st.Text); perr == nil && (cmd.Kind == sql.CmdQuery || cmd.Kind == sql.CmdShow || cmd.Kind == sql.CmdExplain) {
		res.Rows, err = r.cl.SQL().Query(ctx, st.Text, opts...)
	} else {
		res, err = r.cl.SQL().Exec(ctx, st.Text)
	}
	if err != nil {
		var se *client.SQLError
		if errors.As(err, &se) && se.Line > 0 {
			line, col := st.Place(se.Line, se.Column)
			return fmt.Errorf("line %d, column %d: %s", line, col, se.Msg)
		}
		return err
	}
	return writeExecResult(r.w, r.format, res)
}

// shell reads statements from the terminal until EOF (Ctrl-D).
func (r *sqlRunner) shell() error {
	history := r.c.String("history")
	if history == "" {
		if home, err := os.UserHomeDir(); err == nil {
			history = filepath.Join(home, ".lockstep_sql_history")
		}
	}
	rl, err := readline.NewEx(&readline.Config{Prompt: "lockstep> ", HistoryFile: history, DisableAutoSaveHistory: true,
		Stdout: r.w, Stderr: r.c.App.ErrWriter})
	if err != nil {
		return fmt.Errorf("sql: %w", err)
	}
	defer rl.Close()
	var buf strings.Builder
	for {
		line, err := rl.Readline()
		switch {
		case errors.Is(err, readline.ErrInterrupt):
			buf.Reset()
			rl.SetPrompt("lockstep> ")
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("sql: %w", err)
		}
		buf.WriteString(line)
		buf.WriteByte('\n')
		if _, complete := sql.SplitStatements(buf.String()); !complete {
			rl.SetPrompt("      -> ")
			continue
		}
		text := strings.TrimSpace(buf.String())
		buf.Reset()
		rl.SetPrompt("lockstep> ")
		if text == "" {
			continue
		}
		_ = rl.SaveHistory(strings.ReplaceAll(text, "\n", " "))
		_ = r.script(text, false)
	}
}

// writeExecResult prints what a statement did: its rows, or one line.
func writeExecResult(w io.Writer, format string, res client.ExecResult) error {
	if res.Rows != nil {
		if format == outputJSON {
			out := make([]map[string]any, 0, len(res.Rows.Rows))
			for _, row := range res.Rows.Rows {
				m := map[string]any{}
				for i, col := range res.Rows.Columns {
					m[col.Name] = jsonValue(row[i])
				}
				out = append(out, m)
			}
			return writeJSON(w, out)
		}
		tw := newTable(w)
		var head []string
		for _, col := range res.Rows.Columns {
			head = append(head, strings.ToUpper(col.Name))
		}
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, row := range res.Rows.Rows {
			cells := make([]string, len(row))
			for i, v := range row {
				cells[i] = sqlCell(v)
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "(%d rows)\n", len(res.Rows.Rows))
		return err
	}
	if format == outputJSON {
		return writeJSON(w, map[string]any{"deployed": res.Deployed, "dropped": res.Dropped, "appended": res.Appended})
	}
	switch {
	case res.Deployed != "":
		_, err := fmt.Fprintf(w, "deployed %s\n", res.Deployed)
		return err
	case len(res.Dropped) > 0:
		_, err := fmt.Fprintf(w, "dropped %s\n", strings.Join(res.Dropped, ", "))
		return err
	}
	_, err := fmt.Fprintf(w, "inserted %d rows\n", res.Appended)
	return err
}

func sqlCell(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case time.Time:
		return x.UTC().Format("2006-01-02 15:04:05.000")
	case []byte:
		return `\x` + hex.EncodeToString(x)
	}
	return fmt.Sprint(v)
}

func jsonValue(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case time.Duration:
		return x.String()
	}
	return v
}
