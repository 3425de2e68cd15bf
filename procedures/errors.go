package procedures

import (
	"errors"
	"fmt"
)

// Errors an invocation can fail with besides its procedure's own. Each is returned wrapped
// with context; test with errors.Is.
var (
	// ErrUnknownProcedure is returned for an input naming no registered procedure.
	ErrUnknownProcedure = errors.New("unknown procedure")
	// ErrBadArguments is returned when the arguments do not decode into the procedure's
	// declared argument type (wrong types, unknown fields, trailing bytes).
	ErrBadArguments = errors.New("bad arguments")
	// ErrWrongScope is returned when a multi-partition procedure is invoked as a
	// single-partition input, or the other way round.
	ErrWrongScope = errors.New("wrong partition scope for procedure")
	// ErrReadOnly is returned when a procedure registered read-only writes.
	ErrReadOnly = errors.New("read-only procedure wrote")
	// ErrResultEncoding is returned when a procedure's result cannot be encoded.
	ErrResultEncoding = errors.New("result cannot be encoded")
	// ErrProcedure is matched by every ProcedureError.
	ErrProcedure = errors.New("procedure failed")
	// ErrDuplicate is returned when a procedure name is registered twice.
	ErrDuplicate = errors.New("procedure already registered")
	// ErrBadName is returned when a procedure name is empty or too long, or its version
	// ("name@N") is not a number from 1 to MaxVersion.
	ErrBadName = errors.New("bad procedure name")
	// ErrVersionFlags is returned when a version of a procedure is registered with other
	// read-only or multi-partition flags than another version of it.
	ErrVersionFlags = errors.New("procedure versions differ in their flags")
)

// ProcedureError is the error a procedure itself returned. Its message reaches the
// caller; the engine has undone the input's effects.
type ProcedureError struct {
	// Procedure is the name of the procedure that failed.
	Procedure string
	// Err is the error the procedure returned.
	Err error
}

func (e *ProcedureError) Error() string { return fmt.Sprintf("%s: %v", e.Procedure, e.Err) }

// Unwrap returns the procedure's own error, so errors.Is sees through to it.
func (e *ProcedureError) Unwrap() error { return e.Err }

// Is reports whether target is ErrProcedure.
func (e *ProcedureError) Is(target error) bool { return target == ErrProcedure }
