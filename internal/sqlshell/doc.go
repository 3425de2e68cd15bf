/*
Package sqlshell runs SQL text for `lockstep sql` (docs/sql.md, "Surfaces"): a script's
statements one by one, or an interactive shell, over client.SQL, and prints what each
did.

# Duties

 1. Split a script into statements (sql.SplitStatements) and run each (Runner.Script):
    queries (SELECT, SHOW, EXPLAIN) with SQL.Query, everything else with SQL.Exec; an
    error at a place of the statement is reported at its line and column of the script.
 2. Read statements from a terminal (Runner.Shell): line editing, a history file, a
    continuation prompt until a ';' ends the statement; Ctrl-C drops the statement,
    Ctrl-D ends the shell.
 3. Print a result (WriteResult): rows as a table or JSON objects, or one line saying
    what was deployed, dropped or inserted.

# Usage

	r := &sqlshell.Runner{Client: cl, Format: cliout.Table, Out: os.Stdout, ErrOut: os.Stderr, Timeout: time.Minute}
	err := r.Script(text, true)

# Contract

Each statement runs on its own, within Timeout; a script stops at the first error when
asked to, else the error is printed and the next statement runs.
*/
package sqlshell
