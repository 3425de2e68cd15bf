package pgsink

import (
	"context"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"
)

// HoldEpoch begins a transaction on the sink's connection that passes the epoch check
// of every partition the sink holds and so holds their epoch rows, as a sink paused
// between its check and its commit does.
func (s *Sink) HoldEpoch(ctx context.Context) (pgx.Tx, error) {
	tx, err := s.conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.checkEpochs(ctx, tx, slices.Sorted(maps.Keys(s.epochs))); err != nil {
		tx.Rollback(ctx)
		return nil, err
	}
	return tx, nil
}

// Crash closes the sink's connection to PostgreSQL under it, as a killed process's
// connection ends: a transaction in flight is rolled back by the server, and Run fails.
func (s *Sink) Crash() { s.conn.PgConn().Conn().Close() }
