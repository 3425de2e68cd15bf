package sql

import (
	"errors"
	"fmt"
)

// The kinds of compile errors. Every error of Compile and EncodeInsert is an *Error
// whose Kind is one of these; test with errors.Is.
var (
	// ErrSyntax: the text does not parse (PostgreSQL's grammar, plus EMIT and CREATE
	// STREAM).
	ErrSyntax = errors.New("syntax error")
	// ErrUnknown: a column, relation, function or option that does not exist.
	ErrUnknown = errors.New("unknown name")
	// ErrType: an expression whose operand types do not go together, or a value that
	// does not fit its column.
	ErrType = errors.New("type mismatch")
	// ErrUnsupported: valid PostgreSQL that Lockstep's dialect does not run (joins,
	// subqueries, ORDER BY in a view, nondeterministic functions, …).
	ErrUnsupported = errors.New("unsupported")
	// ErrDefinition: a bad definition: a missing or bad key or event-time column, a bad
	// option value, a name defined twice or already taken, a bad window size.
	ErrDefinition = errors.New("bad definition")
)

// Error is a compile error at a place in the SQL text.
type Error struct {
	// Kind is one of the sentinel errors above.
	Kind error
	// Line and Column are 1-based; Column counts characters. Both are 0 when the error
	// has no place.
	Line, Column int
	// Msg says what is wrong.
	Msg string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("sql: %v: %s", e.Kind, e.Msg)
	}
	return fmt.Sprintf("sql: %d:%d: %v: %s", e.Line, e.Column, e.Kind, e.Msg)
}

// Unwrap returns Kind, so errors.Is(err, ErrSyntax) works.
func (e *Error) Unwrap() error { return e.Kind }

// source is the text being compiled, for turning byte offsets into places.
type source struct {
	text string
}

// errAt returns an Error of kind at byte offset off (negative: no place).
func (s *source) errAt(kind error, off int32, format string, args ...any) *Error {
	e := &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
	if off >= 0 {
		e.Line, e.Column = s.place(int(off))
	}
	return e
}

// place returns the 1-based line and character column of byte offset off.
func (s *source) place(off int) (line, col int) {
	line, col = 1, 1
	for i, r := range s.text {
		if i >= off {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// charOffset returns the byte offset of the n-th character (0-based).
func (s *source) charOffset(n int) int {
	i := 0
	for off := range s.text {
		if i == n {
			return off
		}
		i++
	}
	return len(s.text)
}
