package replica

import (
	"errors"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
)

// codeOf classifies an error of the engine, the procedure layer or the FSM into the wire
// catalogue. Size errors come first: a procedure that passes on the Tx's "key too large"
// failed because of its input, not because of its own logic. A result over the engine's
// MaxResultBytes is TooLarge too: the input ran, was undone, and a retry gets the same.
func codeOf(err error) wire.Code {
	switch {
	case err == nil:
		return wire.CodeOK
	case errors.Is(err, partition.ErrValueTooLarge), errors.Is(err, partition.ErrResultTooLarge):
		return wire.CodeTooLarge
	case errors.Is(err, partition.ErrEmptyKey), errors.Is(err, partition.ErrKeyTooLarge),
		errors.Is(err, partition.ErrBadName), errors.Is(err, procedures.ErrBadArguments):
		return wire.CodeBadArguments
	case errors.Is(err, procedures.ErrUnknownProcedure):
		return wire.CodeUnknownProcedure
	case errors.Is(err, partition.ErrBadScope), errors.Is(err, procedures.ErrWrongScope):
		return wire.CodeBadScope
	case errors.Is(err, procedures.ErrProcedure), errors.Is(err, partition.ErrPanic),
		errors.Is(err, procedures.ErrReadOnly), errors.Is(err, partition.ErrReadOnlyTx),
		errors.Is(err, partition.ErrOutOfScope), errors.Is(err, partition.ErrReplicatedWrite):
		return wire.CodeProcedureError
	case errors.Is(err, ErrSessionExpired), errors.Is(err, ErrStaleRequest):
		return wire.CodeSessionExpired
	case errors.Is(err, ErrUnknownSession):
		return wire.CodeUnknownSession
	case errors.Is(err, ErrSessionWindow), errors.Is(err, ErrSessionCacheFull), errors.Is(err, ErrTooManySessions):
		return wire.CodeOverloaded
	case errors.Is(err, ErrDivergent):
		return wire.CodeDivergent
	}
	return wire.CodeOf(err)
}

// WireError converts any error the FSM or the engine returns into the *wire.Error a client
// receives. nil stays nil.
func WireError(err error) error {
	if err == nil {
		return nil
	}
	var we *wire.Error
	if errors.As(err, &we) {
		return we
	}
	return &wire.Error{Code: codeOf(err), Message: err.Error()}
}
