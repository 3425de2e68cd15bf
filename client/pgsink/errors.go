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
	// ErrFenced is the end of a sink whose epoch of a partition is no longer the current
	// one: a newer instance of the same sink (table and stream) took the partition, and
	// this one's transaction was rolled back, writing nothing. A member of a consumer
	// group fenced by a newer generation of its own group does not end: it learns its
	// new assignment and goes on.
	ErrFenced = errors.New("pgsink: fenced by a newer sink instance")
	// ErrTrimmed is the end of a sink (OnTrimmed TrimmedFail) that found records trimmed
	// by the stream's retention before it wrote them. The error also matches
	// client.ErrOffsetTrimmed and holds a *client.OffsetTrimmedError.
	ErrTrimmed = errors.New("pgsink: records trimmed by retention before the sink wrote them")
	// ErrOffsetRegress is an invariant violation: a batch would store an offset at or
	// below the one stored, which means its records were written before. The transaction
	// is rolled back.
	ErrOffsetRegress = errors.New("pgsink: stored offset would not advance")
)

// FencedError says which epoch of which partition was fenced. It matches ErrFenced.
type FencedError struct {
	// Partition is the stream partition whose epoch moved on.
	Partition int
	// Epoch is this instance's epoch of Partition (0 if it could not take one).
	Epoch int64
	// Group and Generation are those of the instance that holds Partition now (Group
	// empty: a sink outside any group).
	Group      string
	Generation uint64
}

func (e *FencedError) Error() string {
	holder := "a newer sink instance"
	if e.Group != "" {
		holder = fmt.Sprintf("a member of group %q in generation %d", e.Group, e.Generation)
	}
	return fmt.Sprintf("pgsink: epoch %d of partition %d is no longer current: %s took the partition; this transaction was rolled back", e.Epoch, e.Partition, holder)
}

// Unwrap returns ErrFenced.
func (e *FencedError) Unwrap() error { return ErrFenced }
