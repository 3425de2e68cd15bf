package wire

import (
	"errors"
	"strconv"
	"strings"
)

// Code is a wire error code: the outcome class of a Response. Codes form an append-only
// catalogue: a code's number and name never change and are never reused, so any client
// and any server, of any version, agree on what a code means.
type Code uint16

// The catalogue. Append new codes at the end with the next number, add the case to
// Code.describe, a sentinel below, and a row to the pinned table in codes_test.go.
const (
	// CodeOK means the request succeeded.
	CodeOK Code = 0
	// CodeNotLeader means the node cannot serve the request because it is not the leader;
	// Response.Leader names the leader's client address when it is known.
	CodeNotLeader Code = 1
	// CodeUnknownProcedure means no procedure of that name is registered.
	CodeUnknownProcedure Code = 2
	// CodeBadArguments means the arguments did not decode into the procedure's argument type.
	CodeBadArguments Code = 3
	// CodeProcedureError means the procedure ran and returned an error; it had no effect.
	CodeProcedureError Code = 4
	// CodeOverloaded means a bounded queue was full; the request was not accepted.
	CodeOverloaded Code = 5
	// CodeSessionExpired means the session expired; the request was not executed.
	CodeSessionExpired Code = 6
	// CodeDivergent means the replica detected that its state differs from its peers' and
	// stopped serving.
	CodeDivergent Code = 7
	// CodeTimeout means the request's deadline passed before it completed.
	CodeTimeout Code = 8
	// CodeMalformed means a frame or message could not be decoded.
	CodeMalformed Code = 9
	// CodeProtocolVersion means the peer speaks a different protocol version.
	CodeProtocolVersion Code = 10
	// CodeClusterMismatch means the peer belongs to a different cluster.
	CodeClusterMismatch Code = 11
	// CodeUnknownOutcome means the request may or may not have been executed; retry it in the
	// same session with the same sequence number to learn the outcome.
	CodeUnknownOutcome Code = 12
	// CodeInternal means an unexpected server-side failure.
	CodeInternal Code = 13
	// CodeTooLarge means a frame, key, argument or result exceeded a size limit.
	CodeTooLarge Code = 14
	// CodeShuttingDown means the node is shutting down and accepts no new requests.
	CodeShuttingDown Code = 15
	// CodeNotReady means the node is not yet able to serve (starting, catching up, rebuilding).
	CodeNotReady Code = 16
	// CodeBadScope means the request's partition, key set or stream partition is invalid.
	CodeBadScope Code = 17
	// CodeUnknownSession means the session was never opened or was already closed.
	CodeUnknownSession Code = 18
	// CodeUnknownStream means the stream named does not exist (never created, or deleted).
	CodeUnknownStream Code = 19
	// CodeStreamExists means a stream of that name exists already.
	CodeStreamExists Code = 20
	// CodeOffsetTrimmed means a stream read asked for records below the partition's first
	// offset, trimmed by retention; Response.NextOffset is the first offset available.
	CodeOffsetTrimmed Code = 21
	// CodeOffsetPastEnd means a subscription asked to start beyond the partition's next
	// offset (the offset the next append gets); Response.NextOffset is that next offset.
	CodeOffsetPastEnd Code = 22

	// CodePermissionDenied means the caller's identity may not do what it asked: its role
	// (or its grants) do not allow it (docs/security.md, Roles). Nothing changed. Code 23
	// was reserved for branch sub, which did not need it.
	CodePermissionDenied Code = 23

	// CodeUnknownGroup means the consumer group named does not exist (no member ever
	// joined it).
	CodeUnknownGroup Code = 24
	// CodeNotGroupMember means the member is not in the consumer group: it never joined,
	// left, or was removed when its session timed out.
	CodeNotGroupMember Code = 25
	// CodeStaleGeneration means a consumer-group commit named an older generation than the
	// group's: the membership changed since the member got its assignment.
	CodeStaleGeneration Code = 26
	// CodeNotAssigned means a consumer-group commit named a stream partition that is not
	// assigned to the member in the group's current generation.
	CodeNotAssigned Code = 27
	// CodeUnknownUser means a user command named a user that is not in the cluster's users
	// table. Nothing changed.
	CodeUnknownUser Code = 28
	// CodeLimitExceeded means a module's code ran past its deterministic step or size
	// budget (procedures/modules.LimitError): the invocation failed alike on every replica
	// and had no effect.
	CodeLimitExceeded Code = 29

	// lastCode is the highest code in the catalogue.
	lastCode = CodeLimitExceeded
)

// describe returns the stable name and the human-readable text of a catalogued code.
func (c Code) describe() (name, text string, ok bool) {
	switch c {
	case CodeOK:
		return "OK", "ok", true
	case CodeNotLeader:
		return "NotLeader", "not leader", true
	case CodeUnknownProcedure:
		return "UnknownProcedure", "unknown procedure", true
	case CodeBadArguments:
		return "BadArguments", "bad arguments", true
	case CodeProcedureError:
		return "ProcedureError", "procedure error", true
	case CodeOverloaded:
		return "Overloaded", "overloaded", true
	case CodeSessionExpired:
		return "SessionExpired", "session expired", true
	case CodeDivergent:
		return "Divergent", "replica diverged", true
	case CodeTimeout:
		return "Timeout", "timeout", true
	case CodeMalformed:
		return "Malformed", "malformed message", true
	case CodeProtocolVersion:
		return "ProtocolVersion", "protocol version mismatch", true
	case CodeClusterMismatch:
		return "ClusterMismatch", "cluster mismatch", true
	case CodeUnknownOutcome:
		return "UnknownOutcome", "unknown outcome", true
	case CodeInternal:
		return "Internal", "internal error", true
	case CodeTooLarge:
		return "TooLarge", "too large", true
	case CodeShuttingDown:
		return "ShuttingDown", "shutting down", true
	case CodeNotReady:
		return "NotReady", "not ready", true
	case CodeBadScope:
		return "BadScope", "bad scope", true
	case CodeUnknownSession:
		return "UnknownSession", "unknown session", true
	case CodeUnknownStream:
		return "UnknownStream", "unknown stream", true
	case CodeStreamExists:
		return "StreamExists", "stream exists", true
	case CodeOffsetTrimmed:
		return "OffsetTrimmed", "offset trimmed", true
	case CodeOffsetPastEnd:
		return "OffsetPastEnd", "offset past the end", true
	case CodeUnknownGroup:
		return "UnknownGroup", "unknown consumer group", true
	case CodeNotGroupMember:
		return "NotGroupMember", "not a consumer group member", true
	case CodeStaleGeneration:
		return "StaleGeneration", "stale consumer group generation", true
	case CodeNotAssigned:
		return "NotAssigned", "partition not assigned to the member", true
	case CodePermissionDenied:
		return "PermissionDenied", "permission denied", true
	case CodeLimitExceeded:
		return "LimitExceeded", "limit exceeded", true
	case CodeUnknownUser:
		return "UnknownUser", "unknown user", true
	}
	return "", "", false
}

// String returns the code's stable name, or "Code(n)" for a code not in this catalogue
// (for example one added by a newer peer).
func (c Code) String() string {
	if name, _, ok := c.describe(); ok {
		return name
	}
	return "Code(" + strconv.Itoa(int(c)) + ")"
}

// text returns the code's human-readable text.
func (c Code) text() string {
	if _, text, ok := c.describe(); ok {
		return text
	}
	return "error code " + strconv.Itoa(int(c))
}

// codeError is the type of the sentinel errors: a bare code.
type codeError Code

func (e codeError) Error() string { return Code(e).text() }

// Sentinel errors, one per non-OK code. errors.Is(err, ErrX) is true for an *Error with
// the matching code (as decoded from a Response) and for any error that wraps ErrX.
// Server code wraps these with %w so that ErrorResponse picks the right code.
var (
	// ErrNotLeader matches CodeNotLeader.
	ErrNotLeader error = codeError(CodeNotLeader)
	// ErrUnknownProcedure matches CodeUnknownProcedure.
	ErrUnknownProcedure error = codeError(CodeUnknownProcedure)
	// ErrBadArguments matches CodeBadArguments.
	ErrBadArguments error = codeError(CodeBadArguments)
	// ErrProcedureError matches CodeProcedureError.
	ErrProcedureError error = codeError(CodeProcedureError)
	// ErrOverloaded matches CodeOverloaded.
	ErrOverloaded error = codeError(CodeOverloaded)
	// ErrSessionExpired matches CodeSessionExpired.
	ErrSessionExpired error = codeError(CodeSessionExpired)
	// ErrDivergent matches CodeDivergent.
	ErrDivergent error = codeError(CodeDivergent)
	// ErrTimeout matches CodeTimeout.
	ErrTimeout error = codeError(CodeTimeout)
	// ErrMalformed matches CodeMalformed. Every decoding error of this package wraps it.
	ErrMalformed error = codeError(CodeMalformed)
	// ErrProtocolVersion matches CodeProtocolVersion.
	ErrProtocolVersion error = codeError(CodeProtocolVersion)
	// ErrClusterMismatch matches CodeClusterMismatch.
	ErrClusterMismatch error = codeError(CodeClusterMismatch)
	// ErrUnknownOutcome matches CodeUnknownOutcome.
	ErrUnknownOutcome error = codeError(CodeUnknownOutcome)
	// ErrInternal matches CodeInternal.
	ErrInternal error = codeError(CodeInternal)
	// ErrTooLarge matches CodeTooLarge. ErrFrameTooLarge wraps it.
	ErrTooLarge error = codeError(CodeTooLarge)
	// ErrShuttingDown matches CodeShuttingDown.
	ErrShuttingDown error = codeError(CodeShuttingDown)
	// ErrNotReady matches CodeNotReady.
	ErrNotReady error = codeError(CodeNotReady)
	// ErrBadScope matches CodeBadScope.
	ErrBadScope error = codeError(CodeBadScope)
	// ErrUnknownSession matches CodeUnknownSession.
	ErrUnknownSession error = codeError(CodeUnknownSession)
	// ErrUnknownStream matches CodeUnknownStream.
	ErrUnknownStream error = codeError(CodeUnknownStream)
	// ErrStreamExists matches CodeStreamExists.
	ErrStreamExists error = codeError(CodeStreamExists)
	// ErrOffsetTrimmed matches CodeOffsetTrimmed.
	ErrOffsetTrimmed error = codeError(CodeOffsetTrimmed)
	// ErrOffsetPastEnd matches CodeOffsetPastEnd.
	ErrOffsetPastEnd error = codeError(CodeOffsetPastEnd)
	// ErrUnknownGroup matches CodeUnknownGroup.
	ErrUnknownGroup error = codeError(CodeUnknownGroup)
	// ErrNotGroupMember matches CodeNotGroupMember.
	ErrNotGroupMember error = codeError(CodeNotGroupMember)
	// ErrStaleGeneration matches CodeStaleGeneration.
	ErrStaleGeneration error = codeError(CodeStaleGeneration)
	// ErrNotAssigned matches CodeNotAssigned.
	ErrNotAssigned error = codeError(CodeNotAssigned)
	// ErrPermissionDenied matches CodePermissionDenied.
	ErrPermissionDenied error = codeError(CodePermissionDenied)
	// ErrUnknownUser matches CodeUnknownUser.
	ErrUnknownUser error = codeError(CodeUnknownUser)
	// ErrLimitExceeded matches CodeLimitExceeded.
	ErrLimitExceeded error = codeError(CodeLimitExceeded)
)

// Error is a non-OK outcome carried by a Response: what a client gets back from
// Response.Err. It matches the sentinel of its code under errors.Is.
type Error struct {
	// Code is the catalogue code; never CodeOK.
	Code Code
	// Message is the server's description, for people; never match on it.
	Message string
	// Leader is the leader's client address, set with CodeNotLeader when known.
	Leader string
}

// Error returns the code's text, the message and the leader, if any.
func (e *Error) Error() string {
	s := e.Code.text()
	switch {
	case strings.HasPrefix(e.Message, s):
		s = e.Message // the message already starts with the code's text (a wrapped sentinel)
	case e.Message != "":
		s += ": " + e.Message
	}
	if e.Leader != "" {
		s += " (leader " + e.Leader + ")"
	}
	return s
}

// Is reports whether target is the sentinel of e's code, or an *Error with the same code.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case codeError:
		return Code(t) == e.Code
	case *Error:
		return t != nil && t.Code == e.Code
	}
	return false
}

// CodeOf returns the catalogue code for err: CodeOK for nil; the code of the first *Error in
// err's chain; else the code of the first sentinel in err's chain; else CodeInternal.
func CodeOf(err error) Code {
	if err == nil {
		return CodeOK
	}
	var we *Error
	if errors.As(err, &we) && we.Code != CodeOK {
		return we.Code
	}
	var ce codeError
	if errors.As(err, &ce) && Code(ce) != CodeOK {
		return Code(ce)
	}
	return CodeInternal
}

// ErrorResponse returns the Response that reports err for request id: code CodeOf(err),
// the message of err, and the leader address if err carries one. A nil err gives a CodeOK
// Response.
func ErrorResponse(id uint64, err error) Response {
	if err == nil {
		return Response{ID: id, Code: CodeOK}
	}
	resp := Response{ID: id, Code: CodeOf(err), Message: err.Error()}
	var we *Error
	if errors.As(err, &we) && we.Code == resp.Code {
		resp.Leader = we.Leader
		if err == error(we) {
			resp.Message = we.Message
		}
	}
	return resp
}
