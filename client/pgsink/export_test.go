package pgsink

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// HoldEpoch begins a transaction on the sink's connection that passes the epoch check
// and so holds the epoch row, as a sink paused between its check and its commit does.
func (s *Sink) HoldEpoch(ctx context.Context) (pgx.Tx, error) {
	tx, err := s.conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.checkEpoch(ctx, tx); err != nil {
		tx.Rollback(ctx)
		return nil, err
	}
	return tx, nil
}
