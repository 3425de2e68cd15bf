package replica

import "errors"

// Errors an item can fail with in the FSM, before or instead of running its procedure.
// Each is returned wrapped with context; test with errors.Is.
var (
	// ErrSessionExpired is returned for a request to a session that expired or was
	// closed: the request was not executed. If it was a retry, the first attempt's outcome
	// is unknown.
	ErrSessionExpired = errors.New("session expired")
	// ErrUnknownSession is returned for a session id that was never issued.
	ErrUnknownSession = errors.New("unknown session")
	// ErrSessionWindow is returned when a request's sequence number is further ahead of
	// the session's acknowledged results than the result cache holds; it was not executed.
	ErrSessionWindow = errors.New("session window full: acknowledge results first")
	// ErrSessionCacheFull is returned for a new request of a session whose cached,
	// unacknowledged results already hold Config.MaxCachedResultBytes or more; it was not
	// executed. Acknowledging results (a later AckThrough) makes room.
	ErrSessionCacheFull = errors.New("session result cache full: acknowledge results first")
	// ErrStaleRequest is returned for a sequence number the client already acknowledged:
	// its result was freed, so the request is neither run nor answered again.
	ErrStaleRequest = errors.New("request already acknowledged")
	// ErrTooManySessions is returned when opening a session beyond Config.MaxSessions.
	ErrTooManySessions = errors.New("too many sessions")
	// ErrUnknownKind is returned for a log item of a kind this replica does not know.
	ErrUnknownKind = errors.New("unknown log item kind")
	// ErrIncompatible is returned when the cluster's partition count or procedure set
	// differs from this node's.
	ErrIncompatible = errors.New("node incompatible with cluster")
	// ErrDivergent is returned by a replica whose state hash differs from its peers'.
	ErrDivergent = errors.New("replica diverged")
)
