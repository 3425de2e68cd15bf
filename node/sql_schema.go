package node

import (
	"fmt"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// SHOW SCHEMA name: the deployed schema of one stream, table or view, for programs that
// decode its records (the typed PostgreSQL sink, docs/sinks.md) as well as for people.
// One row: name, kind (stream, table or view), columns ("name type, ..."), key (the key
// column's name; "" for a view, keyed by its groups), event_time (the event-time
// column's name or ""), module (the SQL module that defined it) and schema (bytea: the
// plan.Schema in the plan format's msgpack encoding, every field as the replicas run it).

// schemaColumns are the columns of the answer to SHOW SCHEMA.
var schemaColumns = []wire.SQLColumn{{Name: "name", Type: "text"}, {Name: "kind", Type: "text"}, {Name: "columns", Type: "text"},
	{Name: "key", Type: "text"}, {Name: "event_time", Type: "text"}, {Name: "module", Type: "text"}, {Name: "schema", Type: "bytea"}}

// showSchema answers SHOW SCHEMA name from the deployed SQL modules. A name no module
// defines is an *sql.Error of kind sql.ErrUnknown.
func showSchema(mods []replica.SQLModule, name string) (wire.SQLResult, error) {
	for _, m := range mods {
		for _, s := range m.Plan.Schemas() {
			if s.Name != name {
				continue
			}
			enc, err := msgpack.Marshal(&s)
			if err != nil {
				return wire.SQLResult{}, fmt.Errorf("sql: SHOW SCHEMA %s: %w", name, err)
			}
			cols := make([]string, len(s.Columns))
			for i, c := range s.Columns {
				cols[i] = c.Name + " " + c.Type.String()
			}
			return wire.SQLResult{Kind: wire.SQLRows, Columns: schemaColumns, Rows: [][]any{{
				s.Name, s.Kind.String(), strings.Join(cols, ", "), columnName(s, s.Key), columnName(s, s.EventTime), m.Name, enc}}}, nil
		}
	}
	return wire.SQLResult{}, &sql.Error{Kind: sql.ErrUnknown, Msg: fmt.Sprintf("SHOW SCHEMA %s: no stream, table or view of that name is deployed", name)}
}

// columnName is the name of column i of s, or "" when i is -1.
func columnName(s plan.Schema, i int) string {
	if i < 0 || i >= len(s.Columns) {
		return ""
	}
	return s.Columns[i].Name
}
