package sqlshell

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/chzyer/readline"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/lockstepdb/lockstep/sql"
)

// Runner runs statements with a client and prints their results.
type Runner struct {
	// Client runs the statements (client.Open is enough).
	Client *client.Client
	// Format is the output format, cliout.Table or cliout.JSON.
	Format string
	// Out gets the results; ErrOut the errors of a script that goes on after one.
	Out, ErrOut io.Writer
	// Context bounds the whole run; Timeout each statement.
	Context context.Context
	Timeout time.Duration
	// ReadAny answers queries from the state of any node (possibly stale).
	ReadAny bool
	// History is the shell's history file; empty: none.
	History string
}

// Script runs every statement of text; with stop, the first error ends it.
func (r *Runner) Script(text string, stop bool) error {
	stmts, _ := sql.SplitStatements(text)
	for _, st := range stmts {
		if err := r.statement(st); err != nil {
			if stop {
				return err
			}
			fmt.Fprintln(r.ErrOut, "error:", strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; "))
		}
	}
	return nil
}

// statement runs one statement and prints its result.
func (r *Runner) statement(st sql.Statement) error {
	ctx, cancel := context.WithTimeout(r.Context, r.Timeout)
	defer cancel()
	var err error
	var opts []client.QueryOption
	if r.ReadAny {
		opts = append(opts, client.WithReadAny())
	}
	var res client.ExecResult
	if cmd, perr := sql.ParseCommand(st.Text); perr == nil && (cmd.Kind == sql.CmdQuery || cmd.Kind == sql.CmdShow || cmd.Kind == sql.CmdExplain) {
		res.Rows, err = r.Client.SQL().Query(ctx, st.Text, opts...)
	} else {
		res, err = r.Client.SQL().Exec(ctx, st.Text)
	}
	if err != nil {
		var se *client.SQLError
		if errors.As(err, &se) && se.Line > 0 {
			line, col := st.Place(se.Line, se.Column)
			return fmt.Errorf("line %d, column %d: %s", line, col, se.Msg)
		}
		return err
	}
	return WriteResult(r.Out, r.Format, res)
}

// Shell reads statements from the terminal until EOF (Ctrl-D).
func (r *Runner) Shell() error {
	rl, err := readline.NewEx(&readline.Config{Prompt: "lockstep> ", HistoryFile: r.History, DisableAutoSaveHistory: true,
		Stdout: r.Out, Stderr: r.ErrOut})
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
		_ = r.Script(text, false)
	}
}

// WriteResult prints what a statement did in format: its rows, or one line.
func WriteResult(w io.Writer, format string, res client.ExecResult) error {
	if res.Rows != nil {
		if format == cliout.JSON {
			out := make([]map[string]any, 0, len(res.Rows.Rows))
			for _, row := range res.Rows.Rows {
				m := map[string]any{}
				for i, col := range res.Rows.Columns {
					m[col.Name] = jsonValue(row[i])
				}
				out = append(out, m)
			}
			return cliout.WriteJSON(w, out)
		}
		tw := cliout.NewTable(w)
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
	if format == cliout.JSON {
		return cliout.WriteJSON(w, map[string]any{"deployed": res.Deployed, "dropped": res.Dropped, "appended": res.Appended})
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

// sqlCell renders one value of a row for a table.
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

// jsonValue renders one value of a row for JSON: times and durations as text.
func jsonValue(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case time.Duration:
		return x.String()
	}
	return v
}
