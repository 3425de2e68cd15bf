package client

import (
	"errors"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// Errors a server returns reach the caller as a *Error (the wire catalogue's error, with
// its Code and the server's Message); each matches one of the sentinels below under
// errors.Is. The sentinels are the wire catalogue's own, so client.ErrNotLeader and the
// server's NotLeader code are the same thing. Never match errors by their message.
//
// The errors the client retries (those that say "retries" below) reach the caller of a
// retrying method (Invoke, Query, ReadStream, ...) only as the last error named in the
// text of ErrRetriesExhausted or of a context error, never as the returned error's
// identity. Status makes one attempt and returns them as they are (ClusterStatus, in
// each node's NodeStatus.Err).
var (
	// ErrNotLeader: the node was not the leader. The client follows the leader hint and
	// retries.
	ErrNotLeader = wire.ErrNotLeader
	// ErrUnknownProcedure: no procedure of that name is registered. Definite: nothing ran.
	ErrUnknownProcedure = wire.ErrUnknownProcedure
	// ErrBadArguments: the arguments or the partition key were rejected. Definite: nothing
	// ran.
	ErrBadArguments = wire.ErrBadArguments
	// ErrProcedure: the procedure ran and returned an error; it had no effect. Definite.
	ErrProcedure = wire.ErrProcedureError
	// ErrOverloaded: a bounded queue on the server was full; the request was not accepted.
	// The client backs off and retries.
	ErrOverloaded = wire.ErrOverloaded
	// ErrSessionExpired: the session expired and the request did not run. The client
	// handles it (see the package documentation) and never returns it for an invocation.
	ErrSessionExpired = wire.ErrSessionExpired
	// ErrUnknownSession: the server never issued the session; handled like
	// ErrSessionExpired.
	ErrUnknownSession = wire.ErrUnknownSession
	// ErrUnknownOutcome: the request may or may not have been executed, and the client can
	// no longer find out. The client returns it in two cases: an invocation's session
	// expired after an attempt whose outcome was in doubt, and a membership change's
	// attempt was in doubt (see the package documentation).
	ErrUnknownOutcome = wire.ErrUnknownOutcome
	// ErrTimeout: the server's deadline for the request passed. The client retries.
	ErrTimeout = wire.ErrTimeout
	// ErrTooLarge: a key, the arguments or a frame exceeded a size limit. Definite.
	ErrTooLarge = wire.ErrTooLarge
	// ErrBadScope: the key set or stream partition is invalid. Definite.
	ErrBadScope = wire.ErrBadScope
	// ErrNotReady: the node cannot serve yet (starting, catching up, incompatible). The
	// client retries on another node.
	ErrNotReady = wire.ErrNotReady
	// ErrShuttingDown: the node is stopping and refused the request. The client retries
	// on another node.
	ErrShuttingDown = wire.ErrShuttingDown
	// ErrDivergent: the node's state diverged from its peers' and it stopped serving. The
	// client retries on another node.
	ErrDivergent = wire.ErrDivergent
	// ErrInternal: an unexpected server-side failure. An invocation that gets it is asked
	// once more with the same sequence number (the node may have lost a committed
	// result); a second one is returned.
	ErrInternal = wire.ErrInternal
	// ErrMalformed: the server could not decode the request, or the client could not
	// decode the server's answer.
	ErrMalformed = wire.ErrMalformed
	// ErrClusterMismatch: the node belongs to another cluster than Config.ClusterID.
	ErrClusterMismatch = wire.ErrClusterMismatch
	// ErrProtocolVersion: the node speaks another protocol version.
	ErrProtocolVersion = wire.ErrProtocolVersion
	// ErrUnknownStream: the stream does not exist (never created, or deleted). Definite:
	// an append that gets it appended nothing.
	ErrUnknownStream = wire.ErrUnknownStream
	// ErrStreamExists: CreateStream named a stream that exists. Definite: nothing changed.
	ErrStreamExists = wire.ErrStreamExists
	// ErrOffsetTrimmed: ReadStream asked for an offset below the first one the stream's
	// retention kept; the error is an *OffsetTrimmedError naming that first offset.
	ErrOffsetTrimmed = wire.ErrOffsetTrimmed
)

// Errors of the client itself.
var (
	// ErrBadConfig is returned by Config.Validate and Dial for an invalid Config.
	ErrBadConfig = errors.New("client: bad config")
	// ErrClosed is returned by every method once Close has been called. A request that was
	// in flight when Close was called may or may not have run.
	ErrClosed = errors.New("client: closed")
	// ErrRetriesExhausted is returned when a request failed Config.MaxRetries+1 times with
	// errors worth retrying; the error's text names the last one. If the request had been
	// sent, its outcome is unknown, as after any abandoned remote call.
	ErrRetriesExhausted = errors.New("retries exhausted")
	// ErrConnLost is the cause reported when the connection to a node broke while requests
	// were in flight. The client retries them; callers see it only inside other errors.
	ErrConnLost = errors.New("connection lost")
	// ErrUnreachable is the cause reported when the client could not connect to a node:
	// the dial or the protocol handshake failed, so no request reached it. Status and
	// ClusterStatus return it (for ClusterStatus, in the node's NodeStatus.Err); the
	// retrying methods try another node.
	ErrUnreachable = errUnreachable
	// ErrUnknownMember is returned by Remove and TransferLeadership for a node id that is
	// not among the cluster's members, as the leader records them. Nothing was changed.
	ErrUnknownMember = errors.New("client: unknown member")
)

// Error is the error a node returned for a request: a catalogue Code, the server's
// Message, and, with ErrNotLeader, the leader's address. It matches the sentinel of its
// code under errors.Is.
type Error = wire.Error

// Code is a wire error code, the outcome class of a server answer.
type Code = wire.Code
