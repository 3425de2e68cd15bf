package plan

import "errors"

// Errors of plans and of running them. Each is returned wrapped with context naming the
// view, column or operator; test with errors.Is.
var (
	// ErrBadPlan is returned by Decode and Validate for a plan that is malformed or
	// inconsistent: a bad name, a column index out of range, an expression whose types do
	// not check, a window of a bad size.
	ErrBadPlan = errors.New("sql plan: bad plan")
	// ErrVersion is returned by Decode for a plan format version this binary cannot run.
	ErrVersion = errors.New("sql plan: unsupported plan format version")
	// ErrBadRow is matched by every RowError: a record that does not fit its stream's
	// schema. Its processor fails the record, which goes to the dead-letter stream.
	ErrBadRow = errors.New("sql: bad row")
	// ErrEval is returned when an expression cannot be evaluated for a row: division by
	// zero, integer overflow, a bad argument to a function. The row's record fails.
	ErrEval = errors.New("sql: expression failed")
	// ErrCorrupt is returned for operator state that does not decode (an invariant
	// violation: only the operator writes its tables).
	ErrCorrupt = errors.New("sql: corrupt operator state")
	// ErrRegistered is returned by Register when a name the plan needs is taken in the
	// registry; nothing is registered.
	ErrRegistered = errors.New("sql: name already registered")
)

// RowError is a row refused by its schema: the column and the reason.
type RowError struct {
	// Stream names the stream or table the row was written to.
	Stream string
	// Column names the column at fault; empty when the row as a whole is bad.
	Column string
	// Reason says what is wrong.
	Reason string
}

func (e *RowError) Error() string {
	if e.Column == "" {
		return "sql: bad row for " + e.Stream + ": " + e.Reason
	}
	return "sql: bad row for " + e.Stream + ": column " + e.Column + ": " + e.Reason
}

// Is makes errors.Is(err, ErrBadRow) true for a RowError.
func (e *RowError) Is(target error) bool { return target == ErrBadRow }
