package pgsink

import (
	"context"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// ErrNoSchema is a stream that exists but has no schema in the cluster's SQL catalogue
// (created with `lockstep stream create`, not by CREATE STREAM, TABLE or MATERIALIZED
// VIEW): a typed sink cannot decode its records. Sink it raw, or give the schema.
var ErrNoSchema = errors.New("pgsink: stream has no SQL schema")

// CatalogRows returns the Rows of stream as the cluster's SQL catalogue has it (the
// deployed CREATE STREAM, CREATE TABLE or CREATE MATERIALIZED VIEW that defined it,
// client.SQL.Schema), in mode, or by default ModeAppend for a stream and ModeUpsert for
// a table or view (as RowsFor). It reads and writes nothing else. A stream that exists
// without a schema is ErrNoSchema; one that does not exist ErrUnknownStream; a bad
// mode, or ModeAppend for a view, ErrBadConfig.
func CatalogRows(ctx context.Context, c *client.Client, stream string, mode Mode) (*Rows, error) {
	info, err := c.SQL().Schema(ctx, stream)
	var sqlErr *client.SQLError
	if errors.As(err, &sqlErr) {
		// No deployed SQL module defines stream: is there a stream at all?
		if _, derr := c.Streams().Describe(ctx, stream); derr != nil {
			if errors.Is(derr, client.ErrUnknownStream) {
				return nil, fmt.Errorf("%w %q: %w", ErrUnknownStream, stream, derr)
			}
			return nil, fmt.Errorf("pgsink: describe stream %q: %w", stream, derr)
		}
		return nil, fmt.Errorf("%w: %q was not created by SQL (CREATE STREAM, TABLE or MATERIALIZED VIEW), so its records have no columns to write; sink it raw (no --mode) or give its CREATE statement (--schema): %w",
			ErrNoSchema, stream, err)
	}
	if err != nil {
		return nil, fmt.Errorf("pgsink: read the schema of %q from the cluster: %w", stream, err)
	}
	var s plan.Schema
	if err := msgpack.Unmarshal(info.Encoded, &s); err != nil {
		return nil, fmt.Errorf("pgsink: schema of %q from the cluster: %w: %w", stream, client.ErrMalformed, err)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("pgsink: schema of %q from the cluster: %w", stream, err)
	}
	return RowsFor([]plan.Schema{s}, stream, mode)
}
