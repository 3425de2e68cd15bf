package partition

import (
	"errors"
	"fmt"
)

// Errors returned by Tx operations and by the Engine. Each is returned wrapped with
// context; test with errors.Is.
var (
	// ErrEmptyKey is returned when a row key is empty.
	ErrEmptyKey = errors.New("partition: empty key")
	// ErrKeyTooLarge is returned when a row key is longer than MaxKeyBytes.
	ErrKeyTooLarge = errors.New("partition: key too large")
	// ErrValueTooLarge is returned when a value or stream record is longer than MaxValueBytes.
	ErrValueTooLarge = errors.New("partition: value too large")
	// ErrResultTooLarge is the result of an input whose encoded result is longer than
	// Config.MaxResultBytes. The input's effects were undone, identically on every replica.
	ErrResultTooLarge = errors.New("partition: result too large")
	// ErrBadName is returned when a table or stream name is empty or longer than MaxNameBytes.
	ErrBadName = errors.New("partition: bad table or stream name")
	// ErrOutOfScope is returned when a Tx reaches a partition its input did not name.
	ErrOutOfScope = errors.New("partition: partition not in the input's scope")
	// ErrReplicatedWrite is returned when an input that does not reach every partition
	// writes a replicated table.
	ErrReplicatedWrite = errors.New("partition: replicated table written by an input that does not reach all partitions")
	// ErrWriteDuringScan is returned when a procedure writes from inside a Scan callback.
	ErrWriteDuringScan = errors.New("partition: write inside a scan callback")
	// ErrReadOnlyTx is returned when a query (Engine.Query) tries to write.
	ErrReadOnlyTx = errors.New("partition: write in a read-only query")
	// ErrTxDone is returned when a Tx is used after its procedure returned.
	ErrTxDone = errors.New("partition: transaction already finished")
	// ErrBadScope is the result of an input whose partition or scope is out of range,
	// unsorted or duplicated.
	ErrBadScope = errors.New("partition: bad partition scope")
	// ErrUnknownStream is returned when an input appends to, reads, describes or deletes
	// a stream that was not created (or was deleted).
	ErrUnknownStream = errors.New("partition: unknown stream")
	// ErrStreamExists is returned when an input creates a stream that exists.
	ErrStreamExists = errors.New("partition: stream already exists")
	// ErrBadRetention is returned for a stream definition whose bounds cannot be met
	// (negative).
	ErrBadRetention = errors.New("partition: impossible stream retention")
	// ErrOffsetTrimmed is matched by every OffsetTrimmedError.
	ErrOffsetTrimmed = errors.New("partition: offset trimmed")
	// ErrPanic is matched by every PanicError.
	ErrPanic = errors.New("partition: procedure panicked")
)

// PanicError is the result of an input whose handler panicked. The panic was recovered,
// the input's effects were undone, and the message is identical on every replica.
type PanicError struct {
	// Value is the panic value as text: a string itself, an error its Error text,
	// anything else its type and a bounded rendering without addresses, so that it is the
	// same on every replica.
	Value string
}

func (e *PanicError) Error() string { return fmt.Sprintf("procedure panicked: %s", e.Value) }

// Is reports whether target is ErrPanic.
func (e *PanicError) Is(target error) bool { return target == ErrPanic }

// OffsetTrimmedError is returned by a stream read below the stream's first offset: the
// records there were trimmed by retention.
type OffsetTrimmedError struct {
	// Stream is the stream read.
	Stream string
	// Offset is the offset asked for.
	Offset uint64
	// First is the lowest offset still available.
	First uint64
}

func (e *OffsetTrimmedError) Error() string {
	return fmt.Sprintf("stream %s: offset %d trimmed, first available offset %d", e.Stream, e.Offset, e.First)
}

// Is reports whether target is ErrOffsetTrimmed.
func (e *OffsetTrimmedError) Is(target error) bool { return target == ErrOffsetTrimmed }
