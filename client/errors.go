package client

import (
	"errors"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// Code is the outcome class of a node's answer to a request: the error code of the wire
// protocol's catalogue. The catalogue is append-only, so a code's number and name never
// change; a code newer than this client prints as "Code(n)". Every code but CodeOK has a
// sentinel error below (CodeNotLeader: ErrNotLeader, ...).
type Code uint16

// The codes, with the numbers the protocol gives them.
const (
	// CodeOK: the request succeeded. No error carries it.
	CodeOK Code = Code(wire.CodeOK)
	// CodeNotLeader: the node is not the leader; Error.Leader names the leader if known.
	CodeNotLeader Code = Code(wire.CodeNotLeader)
	// CodeUnknownProcedure: no procedure of that name is registered.
	CodeUnknownProcedure Code = Code(wire.CodeUnknownProcedure)
	// CodeBadArguments: the arguments or the partition key were rejected.
	CodeBadArguments Code = Code(wire.CodeBadArguments)
	// CodeProcedureError: the procedure ran and returned an error; it had no effect.
	CodeProcedureError Code = Code(wire.CodeProcedureError)
	// CodeOverloaded: a bounded queue on the node was full; the request was not accepted.
	CodeOverloaded Code = Code(wire.CodeOverloaded)
	// CodeSessionExpired: the session expired; the request did not run.
	CodeSessionExpired Code = Code(wire.CodeSessionExpired)
	// CodeDivergent: the node's state diverged from its peers' and it stopped serving.
	CodeDivergent Code = Code(wire.CodeDivergent)
	// CodeTimeout: the node's deadline for the request passed.
	CodeTimeout Code = Code(wire.CodeTimeout)
	// CodeMalformed: a message could not be decoded.
	CodeMalformed Code = Code(wire.CodeMalformed)
	// CodeProtocolVersion: the node speaks another protocol version.
	CodeProtocolVersion Code = Code(wire.CodeProtocolVersion)
	// CodeClusterMismatch: the node belongs to another cluster.
	CodeClusterMismatch Code = Code(wire.CodeClusterMismatch)
	// CodeUnknownOutcome: the request may or may not have run.
	CodeUnknownOutcome Code = Code(wire.CodeUnknownOutcome)
	// CodeInternal: an unexpected failure on the node.
	CodeInternal Code = Code(wire.CodeInternal)
	// CodeTooLarge: a key, the arguments, a result or a frame exceeded a size limit.
	CodeTooLarge Code = Code(wire.CodeTooLarge)
	// CodeShuttingDown: the node is stopping and accepts no new requests.
	CodeShuttingDown Code = Code(wire.CodeShuttingDown)
	// CodeNotReady: the node cannot serve yet (starting, catching up, incompatible).
	CodeNotReady Code = Code(wire.CodeNotReady)
	// CodeBadScope: the key set or stream partition is invalid.
	CodeBadScope Code = Code(wire.CodeBadScope)
	// CodeUnknownSession: the session was never opened or was closed already.
	CodeUnknownSession Code = Code(wire.CodeUnknownSession)
	// CodeUnknownStream: the stream does not exist.
	CodeUnknownStream Code = Code(wire.CodeUnknownStream)
	// CodeStreamExists: the stream to create exists already.
	CodeStreamExists Code = Code(wire.CodeStreamExists)
	// CodeOffsetTrimmed: the offset read is below the first one retention kept.
	CodeOffsetTrimmed Code = Code(wire.CodeOffsetTrimmed)
	// CodeOffsetPastEnd: a subscription's start offset is beyond the partition's next
	// offset.
	CodeOffsetPastEnd Code = Code(wire.CodeOffsetPastEnd)
	// CodeUnknownGroup: the consumer group does not exist (no member ever joined it).
	CodeUnknownGroup Code = Code(wire.CodeUnknownGroup)
	// CodeNotGroupMember: the member is not in the consumer group.
	CodeNotGroupMember Code = Code(wire.CodeNotGroupMember)
	// CodeStaleGeneration: a group commit named an old generation.
	CodeStaleGeneration Code = Code(wire.CodeStaleGeneration)
	// CodeNotAssigned: a group commit named a partition not assigned to the member.
	CodeNotAssigned Code = Code(wire.CodeNotAssigned)
	// CodePermissionDenied: the caller's role or grants do not allow the request.
	CodePermissionDenied Code = Code(wire.CodePermissionDenied)
	// CodeUnknownUser: a user command named a user the cluster does not know.
	CodeUnknownUser Code = Code(wire.CodeUnknownUser)
	// CodeLimitExceeded: a module's code ran past its step or size budget; it had no
	// effect, alike on every replica.
	CodeLimitExceeded Code = Code(wire.CodeLimitExceeded)
)

// String returns the code's stable name ("NotLeader", "ProcedureError", ...), or
// "Code(n)" for a code this client does not know.
func (c Code) String() string { return wire.Code(c).String() }

// Error is the error a node answered a request with. It matches the sentinel of its Code
// under errors.Is (an *Error with CodeNotLeader matches ErrNotLeader), and any *Error
// with the same Code. Get it with errors.As to read the fields.
type Error struct {
	// Code is the outcome class; never CodeOK.
	Code Code
	// Message is the node's description of the failure, for people: a procedure's error
	// text, what was wrong with the arguments, ... Never match on it.
	Message string
	// Leader is the leader's client address, with CodeNotLeader when the node knows it;
	// else empty.
	Leader string
}

// Error returns the code's text, the node's message and the leader, if any.
func (e *Error) Error() string {
	return (&wire.Error{Code: wire.Code(e.Code), Message: e.Message, Leader: e.Leader}).Error()
}

// Is reports whether target is the sentinel of e's Code, or an *Error with the same Code.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case codeError:
		return Code(t) == e.Code
	case *Error:
		return t != nil && t.Code == e.Code
	}
	return false
}

// codeError is the type of the sentinels of the codes: a bare code.
type codeError Code

func (e codeError) Error() string { return (&wire.Error{Code: wire.Code(e)}).Error() }

// Errors a node returns reach the caller as an *Error, with its Code and the node's
// Message; each matches one of the sentinels below under errors.Is. Never match errors
// by their message. Errors the client detects itself in the same class (a node of another
// cluster, an answer it cannot decode, a key too large to send) match the same sentinels.
//
// The errors the client retries (those that say "retries" below) reach the caller of a
// retrying method (Invoke, Query, ReadStream, ...) only as the last error named in the
// text of ErrRetriesExhausted or of a context error, never as the returned error's
// identity. Status makes one attempt and returns them as they are (Cluster().Status, in
// each node's NodeStatus.Err).
var (
	// ErrNotLeader: the node was not the leader. The client follows the leader hint and
	// retries.
	ErrNotLeader error = codeError(CodeNotLeader)
	// ErrUnknownProcedure: no procedure of that name is registered. Definite: nothing ran.
	ErrUnknownProcedure error = codeError(CodeUnknownProcedure)
	// ErrBadArguments: the arguments or the partition key were rejected. Definite: nothing
	// ran.
	ErrBadArguments error = codeError(CodeBadArguments)
	// ErrProcedure: the procedure ran and returned an error; it had no effect. Definite.
	ErrProcedure error = codeError(CodeProcedureError)
	// ErrOverloaded: a bounded queue on the server was full; the request was not accepted.
	// The client backs off and retries.
	ErrOverloaded error = codeError(CodeOverloaded)
	// ErrSessionExpired: the session expired and the request did not run. The client
	// handles it (see the package documentation) and never returns it for an invocation.
	ErrSessionExpired error = codeError(CodeSessionExpired)
	// ErrUnknownSession: the server never issued the session; handled like
	// ErrSessionExpired.
	ErrUnknownSession error = codeError(CodeUnknownSession)
	// ErrUnknownOutcome: the request may or may not have been executed, and the client can
	// no longer find out. The client returns it in two cases: an invocation's session
	// expired after an attempt whose outcome was in doubt, and a membership change's
	// attempt was in doubt (see the package documentation).
	ErrUnknownOutcome error = codeError(CodeUnknownOutcome)
	// ErrTimeout: the server's deadline for the request passed. The client retries.
	ErrTimeout error = codeError(CodeTimeout)
	// ErrTooLarge: a key, the arguments or a frame exceeded a size limit. Definite.
	ErrTooLarge error = codeError(CodeTooLarge)
	// ErrBadScope: the key set or stream partition is invalid. Definite.
	ErrBadScope error = codeError(CodeBadScope)
	// ErrNotReady: the node cannot serve yet (starting, catching up, incompatible). The
	// client retries on another node.
	ErrNotReady error = codeError(CodeNotReady)
	// ErrShuttingDown: the node is stopping and refused the request. The client retries
	// on another node.
	ErrShuttingDown error = codeError(CodeShuttingDown)
	// ErrDivergent: the node's state diverged from its peers' and it stopped serving. The
	// client retries on another node.
	ErrDivergent error = codeError(CodeDivergent)
	// ErrInternal: an unexpected server-side failure. An invocation that gets it is asked
	// once more with the same sequence number (the node may have lost a committed
	// result); a second one is returned.
	ErrInternal error = codeError(CodeInternal)
	// ErrMalformed: the server could not decode the request, or the client could not
	// decode the server's answer.
	ErrMalformed error = codeError(CodeMalformed)
	// ErrClusterMismatch: the node belongs to another cluster than Config.ClusterID (the
	// node refused the handshake, or named another cluster in its answer). Definite: the
	// client does not retry it, on that node or another, so Dial, Status, Invoke and the
	// admin calls return it at once.
	ErrClusterMismatch error = codeError(CodeClusterMismatch)
	// ErrProtocolVersion: the node speaks another protocol version, or no Lockstep
	// protocol at all (ErrSpeaksHTTP). Definite, like ErrClusterMismatch.
	ErrProtocolVersion error = codeError(CodeProtocolVersion)
	// ErrUnknownStream: the stream does not exist (never created, or deleted). Definite:
	// an append that gets it appended nothing.
	ErrUnknownStream error = codeError(CodeUnknownStream)
	// ErrStreamExists: Streams.Create named a stream that exists. Definite: nothing changed.
	ErrStreamExists error = codeError(CodeStreamExists)
	// ErrOffsetTrimmed: ReadStream asked for an offset below the first one the stream's
	// retention kept; the error is an *OffsetTrimmedError naming that first offset.
	ErrOffsetTrimmed error = codeError(CodeOffsetTrimmed)
	// ErrOffsetPastEnd: Subscribe asked to start beyond the partition's next offset; the
	// error is an *OffsetPastEndError naming that next offset. Definite.
	ErrOffsetPastEnd error = codeError(CodeOffsetPastEnd)
	// ErrUnknownGroup: the consumer group does not exist: no member ever joined it.
	// Definite: nothing changed.
	ErrUnknownGroup error = codeError(CodeUnknownGroup)
	// ErrNotGroupMember: the member is not in the consumer group: it never joined, it
	// left, or it was removed when its session timed out (batch time). Definite: nothing
	// changed; join again to take part.
	ErrNotGroupMember error = codeError(CodeNotGroupMember)
	// ErrStaleGeneration: a commit named a generation older than the group's: the members
	// changed since the assignment it was made under (a zombie's commit). Definite:
	// nothing changed, including the writes of a procedure that committed in the same
	// step; heartbeat to learn the new generation and assignment.
	ErrStaleGeneration error = codeError(CodeStaleGeneration)
	// ErrNotAssigned: a commit named a stream partition the member does not own in the
	// group's current generation. Definite: nothing changed.
	ErrNotAssigned error = codeError(CodeNotAssigned)
	// ErrPermissionDenied: the identity of the client's certificate may not do this (its
	// role or grants do not allow it; docs/security.md, Roles). Nothing changed; not
	// retried.
	ErrPermissionDenied error = codeError(CodePermissionDenied)
	// ErrUnknownUser: a user command named a user that is not in the cluster's users
	// table. Nothing changed; not retried.
	ErrUnknownUser error = codeError(CodeUnknownUser)
	// ErrLimitExceeded: a deployed module's procedure ran past its deterministic step or
	// size budget (docs/procedures.md, Limits). Definite: it had no effect.
	ErrLimitExceeded error = codeError(CodeLimitExceeded)
)

// ErrSpeaksHTTP is returned when the address answered the handshake in HTTP: it is an
// HTTP server, typically a node's admin address (/status, /metrics), not its client
// address. It wraps ErrProtocolVersion and, like it, is not retried.
var ErrSpeaksHTTP error = &wrapped{msg: wire.ErrSpeaksHTTP.Error(), errs: []error{ErrProtocolVersion}}

// Errors of the client itself.
var (
	// ErrBadConfig is returned by Config.Validate and Dial for an invalid Config.
	ErrBadConfig = errors.New("client: bad config")
	// ErrClosed is returned by every method once Close has been called. A request that was
	// in flight when Close was called may or may not have run.
	ErrClosed = errors.New("the client is closed")
	// ErrRetriesExhausted is returned when a request failed Config.MaxRetries+1 times with
	// errors worth retrying; the error's text names the last one. If the request had been
	// sent, its outcome is unknown, as after any abandoned remote call.
	ErrRetriesExhausted = errors.New("retries exhausted")
	// ErrConnLost is the cause reported when the connection to a node broke while requests
	// were in flight. The client retries them; callers see it only inside other errors.
	ErrConnLost = errors.New("connection lost")
	// ErrUnreachable is the cause reported when the client could not connect to a node:
	// the dial or the protocol handshake failed, so no request reached it. Status and
	// Cluster().Status return it (in the node's NodeStatus.Err); the
	// retrying methods try another node. A handshake the node refused for another cluster
	// or protocol matches ErrClusterMismatch or ErrProtocolVersion as well.
	ErrUnreachable = errUnreachable
	// ErrUnknownMember is returned by Cluster.RemoveMember and Cluster.TransferLeadership
	// for a node id that is not among the cluster's members, as the leader records them.
	// Nothing was changed.
	ErrUnknownMember = errors.New("unknown member")
	// ErrRebuildRefused is returned by Peer.RequestRebuild when the leader refused to rebuild
	// the node now: demoting it would leave fewer healthy voters alive than a quorum
	// needs. The error's text has the leader's reason. Nothing was changed.
	ErrRebuildRefused = errors.New("rebuild refused")
)

// wrapped is an error of this package with the text msg that wraps errs: what an error
// wrapping wire errors becomes once publicErr has replaced them.
type wrapped struct {
	msg  string
	errs []error
}

func (e *wrapped) Error() string   { return e.msg }
func (e *wrapped) Unwrap() []error { return e.errs }

// publicErr returns err as the client hands it to its caller: with every error of the
// wire protocol in err's tree replaced by this package's own, so that callers see
// *Error and this package's sentinels only. A *wire.Error becomes an *Error with the
// same fields, a wire sentinel the client sentinel of its code, wire.ErrSpeaksHTTP
// ErrSpeaksHTTP, and an error that wraps any of them an error with the same text that
// wraps their replacements (and whatever else it wrapped). An err without wire errors is
// returned as it is. The client's own logic (judge, retries) works with wire errors;
// this is the one place they are translated, and every exported method's error passes
// through it (opErr).
func publicErr(err error) error {
	if err == nil || !hasWireErr(err) {
		return err
	}
	if err == wire.ErrSpeaksHTTP {
		return ErrSpeaksHTTP
	}
	switch e := err.(type) {
	case *wire.Error:
		return &Error{Code: Code(e.Code), Message: e.Message, Leader: e.Leader}
	case interface{ Unwrap() error }:
		return &wrapped{msg: err.Error(), errs: []error{publicErr(e.Unwrap())}}
	case interface{ Unwrap() []error }:
		inner := e.Unwrap()
		errs := make([]error, len(inner))
		for i, x := range inner {
			errs[i] = publicErr(x)
		}
		return &wrapped{msg: err.Error(), errs: errs}
	}
	// A wire sentinel: it wraps nothing and has a code.
	return codeError(wire.CodeOf(err))
}

// hasWireErr reports whether err's tree holds an error of the wire protocol: a
// *wire.Error or a wire sentinel.
func hasWireErr(err error) bool {
	var we *wire.Error
	// CodeOf finds a sentinel's code; Internal is also what it says for none.
	return errors.As(err, &we) || wire.CodeOf(err) != wire.CodeInternal || errors.Is(err, wire.ErrInternal)
}
