package client

import (
	"context"
	"fmt"
)

// SQLSchema is the deployed schema of one stream, table or view (SQL.Schema): what SHOW
// SCHEMA answers.
type SQLSchema struct {
	// Name, Kind ("stream", "table" or "view") and Columns ("name type, ...") describe
	// the relation; Key and EventTime name its key and event-time columns ("" for none;
	// a view is keyed by its groups); Module is the SQL module that defined it.
	Name, Kind, Columns, Key, EventTime, Module string
	// Encoded is the schema in the plan format's msgpack encoding (a sql/plan.Schema,
	// every field as the replicas run it): decode it to read the relation's records.
	Encoded []byte
}

// Schema returns the deployed schema of the stream, table or view name, from the
// cluster's SQL catalogue (SHOW SCHEMA name, linearizable). A name that no deployed SQL
// module defines (a stream created without SQL, or none at all) is an *SQLError
// matching ErrBadArguments.
func (s SQL) Schema(ctx context.Context, name string) (SQLSchema, error) {
	rows, err := s.Query(ctx, "SHOW SCHEMA "+name)
	if err != nil {
		return SQLSchema{}, err
	}
	if len(rows.Rows) != 1 || len(rows.Rows[0]) != 7 {
		return SQLSchema{}, fmt.Errorf("client: sql: SHOW SCHEMA %s: %w: %d rows of %d columns, want 1 of 7", name, ErrMalformed, len(rows.Rows), len(rows.Columns))
	}
	r := rows.Rows[0]
	var out SQLSchema
	for i, dst := range []*string{&out.Name, &out.Kind, &out.Columns, &out.Key, &out.EventTime, &out.Module} {
		v, ok := r[i].(string)
		if !ok {
			return SQLSchema{}, fmt.Errorf("client: sql: SHOW SCHEMA %s: %w: column %d is %T", name, ErrMalformed, i, r[i])
		}
		*dst = v
	}
	enc, ok := r[6].([]byte)
	if !ok {
		return SQLSchema{}, fmt.Errorf("client: sql: SHOW SCHEMA %s: %w: schema is %T", name, ErrMalformed, r[6])
	}
	out.Encoded = enc
	return out, nil
}
