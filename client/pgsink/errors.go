package pgsink

import (
	"errors"
	"fmt"
)

// Errors of the sink. Those of the start (a bad DSN, an unreachable server, a missing or
// misshapen table, an unknown stream) come before anything is read or written.
var (
	// ErrBadConfig is a Config that fails Validate.
	ErrBadConfig = errors.New("pgsink: bad config")
	// ErrBadDSN is a DSN that does not parse.
	ErrBadDSN = errors.New("pgsink: bad DSN")
	// ErrConnect is a PostgreSQL server that cannot be reached or refuses the login.
	ErrConnect = errors.New("pgsink: cannot connect to PostgreSQL")
	// ErrMissingTable is a target table that does not exist.
	ErrMissingTable = errors.New("pgsink: target table does not exist")
	// ErrTableSchema is a target table without the columns the sink writes (see
	// TableSchema).
	ErrTableSchema = errors.New("pgsink: target table has the wrong columns")
	// ErrUnknownStream is a stream the cluster does not have.
	ErrUnknownStream = errors.New("pgsink: unknown stream")
	// ErrFenced is the end of a sink whose epoch is no longer the current one: a newer
	// instance of the same sink (table and stream) started, and this one's transaction
	// was rolled back, writing nothing.
	ErrFenced = errors.New("pgsink: fenced by a newer sink instance")
	// ErrOffsetRegress is an invariant violation: a batch would store an offset at or
	// below the one stored, which means its records were written before. The transaction
	// is rolled back.
	ErrOffsetRegress = errors.New("pgsink: stored offset would not advance")
)

// FencedError says which epochs met when a sink was fenced. It matches ErrFenced.
type FencedError struct {
	// Epoch is this instance's epoch.
	Epoch int64
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("pgsink: epoch %d is no longer current: a newer sink instance started; this transaction was rolled back", e.Epoch)
}

// Unwrap returns ErrFenced.
func (e *FencedError) Unwrap() error { return ErrFenced }
