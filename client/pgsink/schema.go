package pgsink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// TableSchema is the shape of a target table, as documented in docs/sinks.md. Other
// columns may follow (with defaults); these must be there with these types:
//
//	CREATE TABLE events (
//	    stream     text        NOT NULL,
//	    partition  integer     NOT NULL,
//	    "offset"   bigint      NOT NULL,
//	    key        bytea,
//	    value      bytea,
//	    event_time timestamptz NOT NULL
//	);
//
// No unique key on (stream, partition, "offset") is needed: the exactly-once mode writes
// each record once without one. Adding one turns a duplicate into an error; leaving it out
// lets the at-least-once mode's duplicates be seen and counted.
const TableSchema = `CREATE TABLE %s (
    stream     text        NOT NULL,
    partition  integer     NOT NULL,
    "offset"   bigint      NOT NULL,
    key        bytea,
    value      bytea,
    event_time timestamptz NOT NULL
)`

// columns are the target table's columns the sink writes, with the types it accepts.
var columns = []struct {
	name  string
	types []string
}{
	{"stream", []string{"text", "character varying"}},
	{"partition", []string{"integer", "bigint"}},
	{"offset", []string{"bigint"}},
	{"key", []string{"bytea"}},
	{"value", []string{"bytea"}},
	{"event_time", []string{"timestamp with time zone"}},
}

// columnNames are the names of columns, in order.
func columnNames() []string {
	out := make([]string, len(columns))
	for i, c := range columns {
		out[i] = c.name
	}
	return out
}

// The sink's own tables, created in the target table's schema on first start:
// lockstep_sink_epochs holds the current epoch of each partition a sink writes, with the
// consumer group and generation of the instance that took it; lockstep_sink_offsets the
// next offset to write per partition. A sink is named by its target table and stream.
const (
	epochsTable  = "lockstep_sink_epochs"
	offsetsTable = "lockstep_sink_offsets"
	createEpochs = `CREATE TABLE IF NOT EXISTS %s (
    sink_table     text    NOT NULL,
    stream         text    NOT NULL,
    partition      integer NOT NULL,
    epoch          bigint  NOT NULL,
    consumer_group text    NOT NULL DEFAULT '',
    generation     bigint  NOT NULL DEFAULT 0,
    PRIMARY KEY (sink_table, stream, partition)
)`
	createOffsets = `CREATE TABLE IF NOT EXISTS %s (
    sink_table  text    NOT NULL,
    stream      text    NOT NULL,
    partition   integer NOT NULL,
    next_offset bigint  NOT NULL,
    PRIMARY KEY (sink_table, stream, partition)
)`
)

// epochColumns are the columns of lockstep_sink_epochs that an earlier layout (one epoch
// per sink, not per partition) lacks.
var epochColumns = []string{"partition", "consumer_group", "generation"}

// checkEpochsLayout fails with ErrTableSchema if lockstep_sink_epochs has an earlier
// layout.
func checkEpochsLayout(ctx context.Context, conn *pgx.Conn, t target) error {
	var n int
	err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = ANY($2) AND NOT attisdropped`,
		t.meta(epochsTable), epochColumns).Scan(&n)
	if err != nil {
		return fmt.Errorf("pgsink: read columns of %s: %w", t.meta(epochsTable), err)
	}
	if n != len(epochColumns) {
		return fmt.Errorf("%w: %s has an earlier layout without the columns %v (one epoch per partition); drop it, it is created again",
			ErrTableSchema, t.meta(epochsTable), epochColumns)
	}
	return nil
}

// target is a resolved target table.
type target struct {
	schema, name string
}

// ident is the table's quoted identifier.
func (t target) ident() pgx.Identifier { return pgx.Identifier{t.schema, t.name} }

// String is the schema-qualified name, the sink's key in its own tables.
func (t target) String() string { return t.schema + "." + t.name }

// meta is the quoted name of one of the sink's own tables beside the target.
func (t target) meta(table string) string { return pgx.Identifier{t.schema, table}.Sanitize() }

// resolveTable finds the table named name (as the session's search_path resolves it) and
// checks its columns, writing nothing.
func resolveTable(ctx context.Context, conn *pgx.Conn, name string) (target, error) {
	parts, err := splitTable(name)
	if err != nil {
		return target{}, err
	}
	var t target
	err = conn.QueryRow(ctx, `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = to_regclass($1) AND c.relkind IN ('r', 'p')`, pgx.Identifier(parts).Sanitize()).Scan(&t.schema, &t.name)
	if errors.Is(err, pgx.ErrNoRows) {
		return target{}, fmt.Errorf("%w: %q (create it as in docs/sinks.md)", ErrMissingTable, name)
	}
	if err != nil {
		return target{}, fmt.Errorf("pgsink: look up table %q: %w", name, err)
	}
	rows, err := conn.Query(ctx, `SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`, t.ident().Sanitize())
	if err != nil {
		return target{}, fmt.Errorf("pgsink: read columns of %q: %w", name, err)
	}
	have := map[string]string{}
	for rows.Next() {
		var col, typ string
		if err := rows.Scan(&col, &typ); err != nil {
			rows.Close()
			return target{}, err
		}
		have[col] = typ
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return target{}, fmt.Errorf("pgsink: read columns of %q: %w", name, err)
	}
	var problems []string
	for _, c := range columns {
		typ, ok := have[c.name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("no column %q", c.name))
		case !slices.Contains(c.types, typ):
			problems = append(problems, fmt.Sprintf("column %q is %s, want %s", c.name, typ, strings.Join(c.types, " or ")))
		}
	}
	if len(problems) > 0 {
		return target{}, fmt.Errorf("%w: %s: %s", ErrTableSchema, t, strings.Join(problems, "; "))
	}
	return t, nil
}
