package pgsink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// ErrBadRecord is a record a typed sink cannot decode with its schema (not a row of the
// schema's columns, or not a change of a view's changelog). The sink stops at its batch,
// which it rolled back: nothing of the batch is written and the stored offsets stay
// before it, so a restart stops at it again until the schema or the stream is fixed.
var ErrBadRecord = errors.New("pgsink: record does not decode with the sink's schema")

// BadRecordError names the record that does not decode. It matches ErrBadRecord and the
// decoding error (a *plan.RowError or plan.ErrCorrupt).
type BadRecordError struct {
	Stream    string
	Partition int
	Offset    uint64
	Err       error
}

func (e *BadRecordError) Error() string {
	return fmt.Sprintf("pgsink: stream %q partition %d offset %d does not decode with the sink's schema: %v; its batch was not written",
		e.Stream, e.Partition, e.Offset, e.Err)
}

// Unwrap returns ErrBadRecord and the decoding error.
func (e *BadRecordError) Unwrap() []error { return []error{ErrBadRecord, e.Err} }

// stageTable is the session's temporary table an upsert batch is copied into before it
// is merged into the target with INSERT ... ON CONFLICT; its rows go at commit.
const stageTable = "lockstep_sink_stage"

// createStage creates the session's stage table with the target's types of l's columns.
func (l *layout) createStage(ctx context.Context, conn *pgx.Conn, t target) error {
	if l.key < 0 {
		return nil
	}
	_, err := conn.Exec(ctx, fmt.Sprintf(`CREATE TEMP TABLE %s ON COMMIT DELETE ROWS AS SELECT %s FROM %s WITH NO DATA`,
		stageTable, l.quotedNames(), t.ident().Sanitize()))
	if err != nil {
		return fmt.Errorf("pgsink: create the stage table: %w", err)
	}
	return nil
}

// typedBatch is a batch of records decoded: the rows to insert (append) or upsert, and
// the keys to delete (a view's deletes), each key at most once, its last change winning.
type typedBatch struct {
	rows    [][]any
	deletes [][]byte
}

// decode decodes recs in order. In upsert mode only the last change of each key stays:
// INSERT ... ON CONFLICT cannot touch one row twice, and the last change is the state.
func (l *layout) decode(stream string, recs []client.Record) (*typedBatch, error) {
	s := &l.rows.Schema
	b := &typedBatch{}
	type change struct {
		del bool
		key []byte
		row []any
	}
	var changes []change
	last := map[string]int{}
	for i := range recs {
		r := &recs[i]
		var c change
		switch {
		case l.changes:
			op, err := opOf(s, r.Data)
			if err != nil {
				return nil, &BadRecordError{Stream: stream, Partition: r.Partition, Offset: r.Offset, Err: err}
			}
			row, err := s.DecodeRow(r.Data[1:])
			if err != nil {
				return nil, &BadRecordError{Stream: stream, Partition: r.Partition, Offset: r.Offset, Err: err}
			}
			c = change{del: op == plan.ChangeDelete, key: r.Key, row: append(row, r.Key)}
		default:
			row, err := s.DecodeRow(r.Data)
			if err != nil {
				return nil, &BadRecordError{Stream: stream, Partition: r.Partition, Offset: r.Offset, Err: err}
			}
			c = change{row: row}
			if l.key >= 0 {
				c.key = plan.KeyBytes(row[s.Key])
			}
		}
		for j, v := range c.row {
			c.row[j] = pgValue(v, j < len(s.Columns) && s.Columns[j].Type == plan.TypeTimestamp, j < len(s.Columns) && s.Columns[j].Type == plan.TypeInterval)
		}
		if l.key < 0 {
			b.rows = append(b.rows, c.row)
			continue
		}
		if j, ok := last[string(c.key)]; ok {
			changes[j] = c
			continue
		}
		last[string(c.key)] = len(changes)
		changes = append(changes, c)
	}
	for _, c := range changes {
		if c.del {
			b.deletes = append(b.deletes, c.key)
		} else {
			b.rows = append(b.rows, c.row)
		}
	}
	return b, nil
}

// opOf returns the change byte of a changelog record's value.
func opOf(s *plan.Schema, value []byte) (byte, error) {
	if len(value) > 0 {
		switch value[0] {
		case plan.ChangeInsert, plan.ChangeUpdate, plan.ChangeDelete:
			return value[0], nil
		}
	}
	return 0, fmt.Errorf("%w: changelog record of %s: no change byte (I, U or D) first", plan.ErrCorrupt, s.Name)
}

// pgValue is the pgx parameter of a decoded value: a timestamp (Unix milliseconds) as a
// time in UTC, an interval (milliseconds) as an interval, anything else as it is.
func pgValue(v any, timestamp, interval bool) any {
	ms, ok := v.(int64)
	switch {
	case ok && timestamp:
		return time.UnixMilli(ms).UTC()
	case ok && interval:
		return pgtype.Interval{Microseconds: ms * 1000, Valid: true}
	}
	return v
}

// write writes b in tx: COPY for an append; for an upsert, the deletes, then COPY into
// the stage table and one INSERT ... ON CONFLICT from it.
func (l *layout) write(ctx context.Context, tx pgx.Tx, t target, b *typedBatch) error {
	if l.key < 0 {
		if _, err := tx.CopyFrom(ctx, t.ident(), l.names, pgx.CopyFromRows(b.rows)); err != nil {
			return fmt.Errorf("pgsink: copy %d rows into %s: %w", len(b.rows), t, err)
		}
		return nil
	}
	if len(b.deletes) > 0 {
		_, err := tx.Exec(ctx, fmt.Sprintf(`DELETE FROM %s WHERE %s = ANY($1)`, t.ident().Sanitize(), pgx.Identifier{l.cols[l.key].name}.Sanitize()), b.deletes)
		if err != nil {
			return fmt.Errorf("pgsink: delete %d rows from %s: %w", len(b.deletes), t, err)
		}
	}
	if len(b.rows) == 0 {
		return nil
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{stageTable}, l.names, pgx.CopyFromRows(b.rows)); err != nil {
		return fmt.Errorf("pgsink: copy %d rows into the stage table: %w", len(b.rows), err)
	}
	names := l.quotedNames()
	if _, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (%s) SELECT %s FROM %s %s`, t.ident().Sanitize(), names, names, stageTable, l.onConflict())); err != nil {
		return fmt.Errorf("pgsink: upsert %d rows into %s: %w", len(b.rows), t, err)
	}
	return nil
}
