package pgsink

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// Mode is how a typed sink writes rows (Config.Rows).
type Mode string

const (
	// ModeAppend inserts one row per record: for a stream, every record is a new row.
	ModeAppend Mode = "append"
	// ModeUpsert keeps one row per key: a record replaces the row of its key (INSERT ...
	// ON CONFLICT DO UPDATE) and a view's delete removes it, so the table holds the
	// relation's current contents.
	ModeUpsert Mode = "upsert"
)

// KeyColumn is the column a typed sink of a view adds as the table's key: the key of the
// row in the view's table, which the view's output columns need not hold (a count per page
// that does not select page; an unaggregated view keyed by input record and offset).
const KeyColumn = "lockstep_key"

// Rows makes a sink typed: it decodes each record with Schema (the canonical row layout,
// docs/sql.md "Rows") and writes the row's columns, not the record's bytes. The schema is
// the caller's: today compiled from the relation's CREATE statement; once the cluster
// keeps the SQL catalogue in its log, read from there.
type Rows struct {
	// Schema is the relation's schema. A stream or table (plan.KindStream, KindTable):
	// each record is a row. A view (plan.KindView): the stream is the view's changelog,
	// each record a change (insert, update, delete) of the row of its key.
	Schema plan.Schema
	// Mode is ModeAppend or ModeUpsert. A view's changelog is written only in
	// ModeUpsert: its final state is the view's contents.
	Mode Mode
}

// pgTypes are the PostgreSQL column types of the SQL types, as format_type prints them.
var pgTypes = map[plan.Type]string{
	plan.TypeBigint:    "bigint",
	plan.TypeDouble:    "double precision",
	plan.TypeText:      "text",
	plan.TypeBytea:     "bytea",
	plan.TypeBoolean:   "boolean",
	plan.TypeTimestamp: "timestamp with time zone",
	plan.TypeInterval:  "interval",
}

// typedColumn is one column a typed sink writes.
type typedColumn struct {
	name    string
	pgType  string
	notNull bool
}

// layout is what a typed sink writes: its columns (the schema's, then KeyColumn for a
// view) and the upsert key among them.
type layout struct {
	rows    Rows
	cols    []typedColumn
	names   []string
	key     int  // index in cols of the upsert key column; -1 in append mode
	changes bool // records are a view's changelog
}

// newLayout checks r and derives the table's columns. Errors match ErrBadConfig.
func newLayout(r Rows) (*layout, error) {
	s := r.Schema
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%w: Rows.Schema: %w", ErrBadConfig, err)
	}
	if r.Mode != ModeAppend && r.Mode != ModeUpsert {
		return nil, fmt.Errorf("%w: Rows.Mode %q: want %q or %q", ErrBadConfig, r.Mode, ModeAppend, ModeUpsert)
	}
	l := &layout{rows: r, key: -1, changes: s.Kind == plan.KindView}
	if l.changes && r.Mode != ModeUpsert {
		return nil, fmt.Errorf("%w: view %s: a view's changelog is written in mode %q only", ErrBadConfig, s.Name, ModeUpsert)
	}
	for i, c := range s.Columns {
		if c.Name == KeyColumn {
			return nil, fmt.Errorf("%w: %s: column %q is the sink's own", ErrBadConfig, s.Name, KeyColumn)
		}
		l.cols = append(l.cols, typedColumn{name: c.Name, pgType: pgTypes[c.Type], notNull: i == s.Key || i == s.EventTime})
	}
	if l.changes {
		l.cols = append(l.cols, typedColumn{name: KeyColumn, pgType: "bytea", notNull: true})
	}
	if r.Mode == ModeUpsert {
		l.key = s.Key
		if l.changes {
			l.key = len(l.cols) - 1
		}
	}
	for _, c := range l.cols {
		l.names = append(l.names, c.name)
	}
	return l, nil
}

// createTable is the CREATE TABLE IF NOT EXISTS of the layout, the upsert key its
// primary key.
func (l *layout) createTable(t pgx.Identifier) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (", t.Sanitize())
	for i, c := range l.cols {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s", pgx.Identifier{c.name}.Sanitize(), c.pgType)
		if c.notNull {
			b.WriteString(" NOT NULL")
		}
	}
	if l.key >= 0 {
		fmt.Fprintf(&b, ", PRIMARY KEY (%s)", pgx.Identifier{l.cols[l.key].name}.Sanitize())
	}
	b.WriteString(")")
	return b.String()
}

// resolveTyped creates the table named name if it does not exist (in the schema the
// session's search_path puts new tables in, or the one named), then checks that it has
// every column of l with its type and, in upsert mode, a unique index on exactly the key
// column: anything else is ErrTableSchema, and nothing is written.
func resolveTyped(ctx context.Context, conn *pgx.Conn, name string, l *layout) (target, error) {
	parts, err := splitTable(name)
	if err != nil {
		return target{}, err
	}
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, pgx.Identifier(parts).Sanitize()).Scan(&exists); err != nil {
		return target{}, fmt.Errorf("pgsink: look up table %q: %w", name, err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, l.createTable(pgx.Identifier(parts))); err != nil {
			return target{}, fmt.Errorf("pgsink: create table %q: %w", name, err)
		}
	}
	var t target
	err = conn.QueryRow(ctx, `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = to_regclass($1) AND c.relkind IN ('r', 'p')`, pgx.Identifier(parts).Sanitize()).Scan(&t.schema, &t.name)
	if errors.Is(err, pgx.ErrNoRows) {
		return target{}, fmt.Errorf("%w: %q is not a table", ErrTableSchema, name)
	}
	if err != nil {
		return target{}, fmt.Errorf("pgsink: look up table %q: %w", name, err)
	}
	have, err := tableColumns(ctx, conn, t)
	if err != nil {
		return target{}, err
	}
	var problems []string
	for _, c := range l.cols {
		typ, ok := have[c.name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("no column %q (want %s)", c.name, c.pgType))
		case typ != c.pgType:
			problems = append(problems, fmt.Sprintf("column %q is %s, want %s", c.name, typ, c.pgType))
		}
	}
	if len(problems) == 0 && l.key >= 0 {
		var unique bool
		err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
			WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL AND i.indexprs IS NULL AND a.attname = $2)`,
			t.ident().Sanitize(), l.cols[l.key].name).Scan(&unique)
		if err != nil {
			return target{}, fmt.Errorf("pgsink: read indexes of %q: %w", name, err)
		}
		if !unique {
			problems = append(problems, fmt.Sprintf("no unique key on (%q) for mode %q (want PRIMARY KEY or UNIQUE on it alone)", l.cols[l.key].name, ModeUpsert))
		}
	}
	if len(problems) > 0 {
		return target{}, fmt.Errorf("%w: %s: %s", ErrTableSchema, t, strings.Join(problems, "; "))
	}
	return t, nil
}

// tableColumns returns the columns of t and their types, as format_type prints them.
func tableColumns(ctx context.Context, conn *pgx.Conn, t target) (map[string]string, error) {
	rows, err := conn.Query(ctx, `SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`, t.ident().Sanitize())
	if err != nil {
		return nil, fmt.Errorf("pgsink: read columns of %s: %w", t, err)
	}
	have, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
		var kv [2]string
		err := r.Scan(&kv[0], &kv[1])
		return kv, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgsink: read columns of %s: %w", t, err)
	}
	m := make(map[string]string, len(have))
	for _, kv := range have {
		m[kv[0]] = kv[1]
	}
	return m, nil
}

// updateSet is the SET list of the upsert: every column but the key from EXCLUDED.
func (l *layout) updateSet() string {
	var sets []string
	for i, c := range l.cols {
		if i != l.key {
			id := pgx.Identifier{c.name}.Sanitize()
			sets = append(sets, id+" = EXCLUDED."+id)
		}
	}
	return strings.Join(sets, ", ")
}

// onConflict is the ON CONFLICT clause of the upsert.
func (l *layout) onConflict() string {
	key := pgx.Identifier{l.cols[l.key].name}.Sanitize()
	if set := l.updateSet(); set != "" {
		return fmt.Sprintf("ON CONFLICT (%s) DO UPDATE SET %s", key, set)
	}
	return fmt.Sprintf("ON CONFLICT (%s) DO NOTHING", key) // the key is the only column
}

// quotedNames are the layout's column names, quoted and comma-separated.
func (l *layout) quotedNames() string {
	q := make([]string, len(l.names))
	for i, n := range l.names {
		q[i] = pgx.Identifier{n}.Sanitize()
	}
	return strings.Join(q, ", ")
}

// RowsFor returns the Rows of the relation named stream among schemas (those of a
// compiled SQL script, or, later, of the cluster's catalogue), in mode, or by default
// ModeAppend for a stream and ModeUpsert for a table or a view. A name missing is
// ErrUnknownStream; a bad mode ErrBadConfig.
func RowsFor(schemas []plan.Schema, stream string, mode Mode) (*Rows, error) {
	for _, s := range schemas {
		if s.Name != stream {
			continue
		}
		if mode == "" {
			mode = ModeUpsert
			if s.Kind == plan.KindStream {
				mode = ModeAppend
			}
		}
		r := &Rows{Schema: s, Mode: mode}
		if _, err := newLayout(*r); err != nil {
			return nil, err
		}
		return r, nil
	}
	names := make([]string, len(schemas))
	for i, s := range schemas {
		names[i] = s.Name
	}
	return nil, fmt.Errorf("%w %q: the schema defines %s", ErrUnknownStream, stream, strings.Join(names, ", "))
}
