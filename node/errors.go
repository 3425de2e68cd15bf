package node

import (
	"context"
	"errors"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sequencer"
)

// wireCodes maps each outcome class the replicas record to the wire catalogue.
var wireCodes = [...]wire.Code{
	replica.CodeOK:               wire.CodeOK,
	replica.CodeBadArguments:     wire.CodeBadArguments,
	replica.CodeUnknownProcedure: wire.CodeUnknownProcedure,
	replica.CodeBadScope:         wire.CodeBadScope,
	replica.CodeProcedureError:   wire.CodeProcedureError,
	replica.CodeTooLarge:         wire.CodeTooLarge,
	replica.CodeSessionExpired:   wire.CodeSessionExpired,
	replica.CodeUnknownSession:   wire.CodeUnknownSession,
	replica.CodeOverloaded:       wire.CodeOverloaded,
	replica.CodeIncompatible:     wire.CodeNotReady,
	replica.CodeInternal:         wire.CodeInternal,
	replica.CodeUnknownStream:    wire.CodeUnknownStream,
	replica.CodeStreamExists:     wire.CodeStreamExists,
	replica.CodeUnknownGroup:     wire.CodeUnknownGroup,
	replica.CodeNotGroupMember:   wire.CodeNotGroupMember,
	replica.CodeStaleGeneration:  wire.CodeStaleGeneration,
	replica.CodeNotAssigned:      wire.CodeNotAssigned,
	replica.CodeUnknownUser:      wire.CodeUnknownUser,
	replica.CodeLimitExceeded:    wire.CodeLimitExceeded,
}

// toWire is the one translation of the errors of the layers below — sequencer, replica,
// engine, node — into the wire catalogue a client receives. nil stays nil.
func (n *Node) toWire(err error) *wire.Error {
	code := wire.CodeInternal
	var we *wire.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &we):
		return we
	case errors.Is(err, sequencer.ErrNotLeader):
		return &wire.Error{Code: wire.CodeNotLeader, Message: err.Error(), Leader: n.leaderClientAddr()}
	case errors.Is(err, sequencer.ErrLeadershipLost), errors.Is(err, sequencer.ErrTimeout),
		errors.Is(err, sequencer.ErrBadResponse):
		// The entry may still commit: the client retries with the same session and
		// sequence number (RAFT-NOTES, hashicorp/raft PR 561).
		code = wire.CodeUnknownOutcome
	case errors.Is(err, sequencer.ErrTooLarge):
		code = wire.CodeTooLarge
	case errors.Is(err, sequencer.ErrBadProposal):
		code = wire.CodeBadArguments
	case errors.Is(err, sequencer.ErrOverloaded):
		code = wire.CodeOverloaded
	case errors.Is(err, sequencer.ErrShutdown):
		code = wire.CodeShuttingDown
	case errors.Is(err, replica.ErrDivergent):
		code = wire.CodeDivergent
	case errors.Is(err, context.DeadlineExceeded):
		code = wire.CodeTimeout
	case wire.CodeOf(err) != wire.CodeInternal:
		code = wire.CodeOf(err) // the node's own errors wrap wire sentinels (NotReady, ...)
	default:
		if c := replica.CodeOf(err); int(c) < len(wireCodes) {
			code = wireCodes[c]
		}
	}
	return &wire.Error{Code: code, Message: err.Error()}
}
