package replica

import (
	"errors"
	"strconv"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/modules"
)

// Code classifies the outcome of one log item as every replica records it: in results,
// in the session cache, and so in snapshots and the meta hash. The values are replicated
// state: append only, never renumber. The node maps each to a wire error code; the
// replica itself knows nothing of the wire.
type Code uint8

// Outcome codes.
const (
	// CodeOK: the item succeeded.
	CodeOK Code = iota
	// CodeBadArguments: the arguments or the key were rejected; nothing ran.
	CodeBadArguments
	// CodeUnknownProcedure: no procedure of that name; nothing ran.
	CodeUnknownProcedure
	// CodeBadScope: the partitions named are invalid for the procedure; nothing ran.
	CodeBadScope
	// CodeProcedureError: the procedure returned an error or panicked; its effects were
	// undone.
	CodeProcedureError
	// CodeTooLarge: a key, a value or the result exceeded a limit; the effects were undone.
	CodeTooLarge
	// CodeSessionExpired: the session expired, or the request was already acknowledged;
	// nothing ran.
	CodeSessionExpired
	// CodeUnknownSession: the session was never issued; nothing ran.
	CodeUnknownSession
	// CodeOverloaded: a session bound was reached (window, cached bytes, session count);
	// nothing ran, and the client may try again after acknowledging.
	CodeOverloaded
	// CodeIncompatible: this replica cannot apply the cluster's log (partition count or
	// procedure set differ); nothing ran.
	CodeIncompatible
	// CodeInternal: anything else (an undecodable payload, an unknown item kind).
	CodeInternal
	// CodeUnknownStream: the stream named was never created, or was deleted; the effects
	// were undone.
	CodeUnknownStream
	// CodeStreamExists: stream.create named a stream that exists; nothing changed.
	CodeStreamExists
	// CodeUnknownGroup: a group call named a consumer group no member ever joined; the
	// effects were undone.
	CodeUnknownGroup
	// CodeNotGroupMember: the member is not in the consumer group (never joined, left, or
	// expired); the effects were undone.
	CodeNotGroupMember
	// CodeStaleGeneration: a group commit named an old generation (a zombie member); the
	// effects were undone.
	CodeStaleGeneration
	// CodeNotAssigned: a group commit named a stream partition not assigned to the member;
	// the effects were undone.
	CodeNotAssigned
	// CodeUnknownUser: a user command named a user not in the users table; nothing changed.
	CodeUnknownUser
	// CodeLimitExceeded: a module's code ran past its step or size budget (from cluster
	// version 3; before, such an error is CodeProcedureError); the effects were undone.
	CodeLimitExceeded
)

var codeNames = [...]string{
	CodeOK: "OK", CodeBadArguments: "BadArguments", CodeUnknownProcedure: "UnknownProcedure",
	CodeBadScope: "BadScope", CodeProcedureError: "ProcedureError", CodeTooLarge: "TooLarge",
	CodeSessionExpired: "SessionExpired", CodeUnknownSession: "UnknownSession",
	CodeOverloaded: "Overloaded", CodeIncompatible: "Incompatible", CodeInternal: "Internal",
	CodeUnknownStream: "UnknownStream", CodeStreamExists: "StreamExists",
	CodeUnknownGroup: "UnknownGroup", CodeNotGroupMember: "NotGroupMember",
	CodeStaleGeneration: "StaleGeneration", CodeNotAssigned: "NotAssigned",
	CodeUnknownUser: "UnknownUser", CodeLimitExceeded: "LimitExceeded",
}

// String returns the code's name, as metrics label outcomes with it.
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Code(" + strconv.Itoa(int(c)) + ")"
}

// Error is a failed item's outcome as the session cache keeps it: a retried request gets
// it instead of the original error, with the same code and message, on every replica.
// It matches (errors.Is) every sentinel whose code is its own.
type Error struct {
	// Code is the outcome's class.
	Code Code
	// Message is the original error's text.
	Message string
}

func (e *Error) Error() string { return e.Message }

// Is reports whether target is a sentinel of e's class, so that a cached outcome matches
// what the original error matched as far as its code tells.
func (e *Error) Is(target error) bool {
	return target != nil && e.Code != CodeInternal && CodeOf(target) == e.Code
}

// CodeOf classifies an error of the engine, the procedure layer or the FSM. Size errors
// come first: a procedure that passes on the Tx's "key too large" failed because of its
// input, not because of its own logic. A result over the engine's MaxResultBytes is
// TooLarge too: the input ran, was undone, and a retry gets the same.
func CodeOf(err error) Code {
	var re *Error
	switch {
	case err == nil:
		return CodeOK
	case errors.As(err, &re):
		return re.Code
	case errors.Is(err, partition.ErrValueTooLarge), errors.Is(err, partition.ErrResultTooLarge):
		return CodeTooLarge
	case errors.Is(err, partition.ErrEmptyKey), errors.Is(err, partition.ErrKeyTooLarge),
		errors.Is(err, partition.ErrBadName), errors.Is(err, procedures.ErrBadArguments),
		errors.Is(err, partition.ErrBadRetention), errors.Is(err, ErrBadUser),
		errors.Is(err, ErrBadClusterConfig):
		return CodeBadArguments
	case errors.Is(err, partition.ErrUnknownStream):
		return CodeUnknownStream
	case errors.Is(err, partition.ErrStreamExists):
		return CodeStreamExists
	case errors.Is(err, procedures.ErrUnknownGroup):
		return CodeUnknownGroup
	case errors.Is(err, procedures.ErrNotGroupMember):
		return CodeNotGroupMember
	case errors.Is(err, procedures.ErrStaleGeneration):
		return CodeStaleGeneration
	case errors.Is(err, procedures.ErrNotAssigned):
		return CodeNotAssigned
	case errors.Is(err, procedures.ErrUnknownProcedure):
		return CodeUnknownProcedure
	case errors.Is(err, partition.ErrBadScope), errors.Is(err, procedures.ErrWrongScope):
		return CodeBadScope
	case errors.Is(err, modules.ErrLimitExceeded):
		return CodeLimitExceeded
	case errors.Is(err, procedures.ErrProcedure), errors.Is(err, partition.ErrPanic),
		errors.Is(err, procedures.ErrReadOnly), errors.Is(err, partition.ErrReadOnlyTx),
		errors.Is(err, partition.ErrOutOfScope), errors.Is(err, partition.ErrReplicatedWrite):
		return CodeProcedureError
	case errors.Is(err, ErrSessionExpired), errors.Is(err, ErrStaleRequest):
		return CodeSessionExpired
	case errors.Is(err, ErrUnknownSession):
		return CodeUnknownSession
	case errors.Is(err, ErrSessionWindow), errors.Is(err, ErrSessionCacheFull), errors.Is(err, ErrTooManySessions):
		return CodeOverloaded
	case errors.Is(err, ErrIncompatible):
		return CodeIncompatible
	case errors.Is(err, ErrUnknownUser):
		return CodeUnknownUser
	}
	return CodeInternal
}
