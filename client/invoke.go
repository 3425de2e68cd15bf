package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// Consistency is the consistency level of a read-only query.
type Consistency uint8

// Consistency levels: the wire protocol's, which the servers use too.
const (
	// ReadLinearizable reads at the leader: the result reflects every write acknowledged
	// before the query began. Query sends it without a session and the leader answers off
	// the log, from its local state once a quorum has confirmed its leadership (ReadIndex,
	// docs/protocol.md); Invoke of a read-only procedure still goes through the log. The
	// default.
	ReadLinearizable Consistency = Consistency(wire.ConsistencyLinearizable)
	// ReadAny reads the local state of whichever ready replica the client asks, with no
	// session: faster and spread over the cluster, but possibly stale. Only for read-only
	// procedures.
	ReadAny Consistency = Consistency(wire.ConsistencyAny)
)

// Invoke runs the single-partition procedure proc with partition key key and arguments
// args (msgpack-encoded; nil sends none), exactly once, and decodes its result into
// result unless result is nil. It retries as the package documentation describes, with
// the same sequence number every time, until ctx ends or Config.MaxRetries runs out. A
// definite failure is returned as a *Error (errors.Is against ErrProcedure,
// ErrBadArguments, ...).
func (c *Client) Invoke(ctx context.Context, proc string, key []byte, args, result any) error {
	if len(key) == 0 {
		return fmt.Errorf("client: %s: %w: empty partition key", proc, ErrBadArguments)
	}
	return c.invoke(ctx, proc, wire.Request{Op: wire.OpInvoke, Procedure: proc, Key: key, HasKey: true}, args, result)
}

// InvokeMulti runs the multi-partition procedure proc, like Invoke, on the partitions of
// keys, or on every partition if keys is empty.
func (c *Client) InvokeMulti(ctx context.Context, proc string, keys [][]byte, args, result any) error {
	return c.invoke(ctx, proc, wire.Request{Op: wire.OpInvoke, Procedure: proc, Keys: keys}, args, result)
}

// Query runs the read-only single-partition procedure proc at consistency cons, with no
// session (a read needs no exactly-once). With ReadLinearizable the leader answers, off
// the log; with ReadAny one replica answers from its local state. Either is retried on
// other nodes as needed. A procedure that writes is refused (ErrBadArguments) and does
// not run: use Invoke. For a bounded-staleness read see QueryBounded.
func (c *Client) Query(ctx context.Context, proc string, key []byte, args, result any, cons Consistency) error {
	if len(key) == 0 {
		return fmt.Errorf("client: %s: %w: empty partition key", proc, ErrBadArguments)
	}
	return c.query(ctx, proc, wire.Request{Op: wire.OpInvoke, Procedure: proc, Key: key, HasKey: true}, args, result, cons)
}

// QueryMulti runs the read-only multi-partition procedure proc, like Query, on the
// partitions of keys, or on every partition if keys is empty.
func (c *Client) QueryMulti(ctx context.Context, proc string, keys [][]byte, args, result any, cons Consistency) error {
	return c.query(ctx, proc, wire.Request{Op: wire.OpInvoke, Procedure: proc, Keys: keys}, args, result, cons)
}

// invoke runs req, of procedure proc, in the client's session with retries; see the
// package documentation for the rules it keeps. Errors and logs use proc, not
// req.Procedure, so that req does not escape to the heap: escape analysis does not tell
// a struct's fields apart, and a key the caller built on its stack can stay there.
func (c *Client) invoke(ctx context.Context, proc string, req wire.Request, args, result any) error {
	ab, err := c.encodeArgs(proc, &req, args)
	if err != nil {
		return err
	}
	defer c.putArgs(ab)
	sl, err := c.acquire(ctx)
	if err != nil {
		return c.opErr(fmt.Errorf("client: %s: %w", proc, err))
	}
	defer func() { c.sess.release(sl) }()

	inDoubt := false         // an attempt in this session may have run
	internalRetried := false // an Internal answer was retried already
	rs := retry{what: proc}
	for ; ; rs.attempt++ {
		addr, deposed, err := c.target(ctx)
		if err != nil {
			return c.opErr(fmt.Errorf("client: %s: %w", proc, err))
		}
		r := req
		r.Session, r.Seq, r.AckThrough = sl.s.id, sl.seq, c.sess.ackThrough(sl.s)
		resp, sent, err := c.attempt(ctx, addr, &r, deposed)
		v, doubt := judge(addr, &resp, sent, err)
		if v == vDone && err == nil && resp.Code == wire.CodeInternal && !internalRetried {
			// The node may have lost the result of a committed request (the FSM's answer
			// went astray): ask once more, for the session's cached result. A second
			// Internal is the request's recorded outcome.
			internalRetried = true
			v, doubt = vAgain, true
		}
		switch v {
		case vDone:
			if err == nil {
				err = resp.Err()
			}
			if err != nil {
				return c.opErr(err)
			}
			return c.decodeResult(proc, resp.Value, result)
		case vExpired:
			if inDoubt {
				return fmt.Errorf("client: %s (session %d, seq %d): the session expired after an attempt whose outcome is in doubt: %w",
					proc, sl.s.id, sl.seq, ErrUnknownOutcome)
			}
			// No attempt in this session ran: the request moves to a new session.
			c.log.Debug("session expired; opening a new one", "session", sl.s.id, "proc", proc)
			c.sess.expire(sl.s)
			c.sess.release(sl)
			sl = slot{}
			if !c.retriesLeft(rs.attempt) {
				return fmt.Errorf("client: %s: %w after %d attempts (last: %v)", proc, ErrRetriesExhausted, rs.attempt+1, resp.Err())
			}
			if sl, err = c.acquire(ctx); err != nil {
				return c.opErr(fmt.Errorf("client: %s: %w", proc, err))
			}
			inDoubt = false
			continue
		}
		inDoubt = inDoubt || doubt
		if err := c.next(ctx, &rs, v, addr, &resp, err); err != nil {
			return c.opErr(err)
		}
	}
}

// query runs a session-less read req, of procedure proc, with retries: at the leader for
// ReadLinearizable, else on any ready replica.
func (c *Client) query(ctx context.Context, proc string, req wire.Request, args, result any, cons Consistency) error {
	switch {
	case cons == ReadLinearizable, cons == ReadAny:
	case cons == readBounded && req.MaxLag > 0:
	default:
		return fmt.Errorf("client: %s: %w: unknown consistency level %d (QueryBounded reads with a staleness bound)", proc, ErrBadArguments, cons)
	}
	ab, err := c.encodeArgs(proc, &req, args)
	if err != nil {
		return err
	}
	defer c.putArgs(ab)
	req.Consistency = wire.Consistency(cons)
	if cons == ReadLinearizable {
		// Session-less, so the node must refuse a procedure that writes.
		req.Consistency = wire.ConsistencyLinearizableRead
	}
	if err := c.acquireFree(ctx); err != nil {
		return c.opErr(fmt.Errorf("client: %s: %w", proc, err))
	}
	defer c.releaseFree()
	resp, err := c.call(ctx, proc, &req, cons == ReadLinearizable)
	if err != nil {
		return c.opErr(err)
	}
	return c.decodeResult(proc, resp.Value, result)
}

// call runs a session-less request with retries, at the leader if toLeader, else at any
// replica (round robin). It returns the OK Response or the error that ended it.
func (c *Client) call(ctx context.Context, what string, req *wire.Request, toLeader bool) (wire.Response, error) {
	return c.callRetry(ctx, retry{what: what}, req, toLeader)
}

// callRetry is call with the retry state rs to start from (rs.what names the request).
func (c *Client) callRetry(ctx context.Context, rs retry, req *wire.Request, toLeader bool) (wire.Response, error) {
	what := rs.what
	for ; ; rs.attempt++ {
		var addr string
		var deposed <-chan struct{}
		if toLeader {
			var err error
			if addr, deposed, err = c.target(ctx); err != nil {
				return wire.Response{}, fmt.Errorf("client: %s: %w", what, err)
			}
		} else {
			addr = c.anyAddr()
		}
		r := *req
		resp, sent, err := c.attempt(ctx, addr, &r, deposed)
		v, _ := judge(addr, &resp, sent, err)
		if v == vDone || v == vExpired {
			if err == nil {
				err = resp.Err()
			}
			return resp, err
		}
		if !toLeader && v == vRedirect {
			v = vElsewhere // any replica will do; the next one is tried anyway
		}
		if err := c.next(ctx, &rs, v, addr, &resp, err); err != nil {
			return wire.Response{}, err
		}
	}
}

// retry is the retry state of one request.
type retry struct {
	what     string // the request, for errors and logs
	attempt  int    // the attempt that just failed, from 0
	pauses   int    // the pauses so far
	redirect bool   // the previous attempt was redirected
	untilCtx bool   // retry until ctx ends, whatever Config.MaxRetries says (Dial)
}

// next prepares the retry after a failed attempt: it gives up if ctx ended, the client
// closed or the retries ran out, moves the leader guess as v says, and pauses unless v is
// the first of a run of redirects (more in a row mean the nodes disagree on the leader,
// for now).
// It returns nil to retry, or the error to give up with.
func (c *Client) next(ctx context.Context, rs *retry, v verdict, addr string, resp *wire.Response, err error) error {
	last := err
	if last == nil {
		last = resp.Err()
	}
	if ctx.Err() != nil {
		return fmt.Errorf("client: %s: %w (last: %v)", rs.what, ctx.Err(), last)
	}
	if c.isClosing() {
		return fmt.Errorf("client: %s: %w (last: %v)", rs.what, ErrClosed, last)
	}
	if !rs.untilCtx && !c.retriesLeft(rs.attempt) {
		return fmt.Errorf("client: %s: %w after %d attempts (last: %v)", rs.what, ErrRetriesExhausted, rs.attempt+1, last)
	}
	c.log.Debug("retrying", "what", rs.what, "addr", addr, "attempt", rs.attempt+1, "err", last)
	wasRedirect := rs.redirect
	rs.redirect = v == vRedirect
	switch v {
	case vRedirect:
		if !c.redirect(addr, resp.Leader) {
			rs.redirect = false
			c.rotate(addr)
			break
		}
		if !wasRedirect {
			return nil
		}
	case vElsewhere:
		c.rotate(addr)
	case vMoved:
		return nil // a probe found the new leader: go there at once
	}
	if err := c.backoff(ctx, rs.pauses); err != nil {
		return fmt.Errorf("client: %s: %w (last: %v)", rs.what, err, last)
	}
	rs.pauses++
	return nil
}

// errAttemptTimeout is the error of an attempt that got no answer within RequestTimeout.
var errAttemptTimeout = errors.New("no answer within the request timeout")

// attempt sends req to addr once and waits for the answer, within RequestTimeout, ctx
// and until the client closes (ErrClosed) or deposed is closed (errDeposed; nil: never).
// On the usual path, a live connection, it derives no context: the connection's roundTrip
// enforces them all. If connecting failed, or the attempt timed out (either deadline)
// while the node sent nothing on the connection, it suspects the node (leader.go).
func (c *Client) attempt(ctx context.Context, addr string, req *wire.Request, deposed <-chan struct{}) (resp wire.Response, sent bool, err error) {
	timeout := c.cfg.RequestTimeout
	began := monoNow()
	cn, err := c.liveConn(addr)
	if cn == nil && err == nil {
		start := time.Now()
		cn, err = c.dial(ctx, addr, timeout)
		timeout -= time.Since(start)
		if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, context.Canceled) && !refused(err) {
			c.suspect(addr)
		}
	}
	if err == nil {
		resp, sent, err = cn.roundTrip(ctx, req, timeout, c.closing, deposed)
		if timedOut(ctx, err) && !cn.heardSince(began) {
			c.suspect(addr)
		}
	}
	if errors.Is(err, errTimedOut) {
		err = fmt.Errorf("%w: %s after %v: %w", errAttemptTimeout, addr, c.cfg.RequestTimeout, context.DeadlineExceeded)
	}
	return resp, sent, err
}

// dial returns the connection to addr, dialing it if need be, within timeout, ctx and until
// the client closes.
func (c *Client) dial(ctx context.Context, addr string, timeout time.Duration) (*conn, error) {
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	cn, err := c.connTo(dctx, addr)
	switch {
	case err == nil, errors.Is(err, ErrClosed):
	case c.isClosing():
		err = fmt.Errorf("%w (%v)", ErrClosed, err)
	case ctx.Err() == nil && dctx.Err() != nil:
		err = fmt.Errorf("%w: %s after %v: %w", errAttemptTimeout, addr, c.cfg.RequestTimeout, err)
	}
	return cn, err
}

// refused reports whether err is a node's refusal to talk to this client at all: it is
// of another cluster, or speaks another protocol (or HTTP). The handshake finds it, and
// no retry, on that node or another of the seeds, would fare better: the configuration
// is wrong.
func refused(err error) bool {
	return errors.Is(err, wire.ErrClusterMismatch) || errors.Is(err, wire.ErrProtocolVersion) || errors.Is(err, ErrTLS)
}

// verdict is what one attempt's outcome means for the request.
type verdict uint8

const (
	// vDone: a definite answer, success or failure: return it.
	vDone verdict = iota
	// vRedirect: a follower named the leader: retry there at once.
	vRedirect
	// vElsewhere: this node cannot serve now: try another after a pause.
	vElsewhere
	// vAgain: a passing condition: retry after a pause.
	vAgain
	// vExpired: the session is gone; the request did not run.
	vExpired
	// vMoved: a probe moved the leader guess elsewhere while the attempt
	// waited at the old one: retry at once.
	vMoved
)

// judge classifies the outcome of one attempt at addr. doubt reports whether the attempt
// may have run the request without the client learning its result.
func judge(addr string, resp *wire.Response, sent bool, err error) (v verdict, doubt bool) {
	if err != nil {
		switch {
		case errors.Is(err, ErrClosed), errors.Is(err, wire.ErrTooLarge), refused(err):
			return vDone, sent
		case errors.Is(err, errDeposed):
			return vMoved, sent
		case errors.Is(err, errAttemptTimeout):
			// The node may be paused or cut off, or the request slow. If the node was
			// silent, attempt suspected it: the next attempt waits for the probe's verdict.
			return vAgain, sent
		case errors.Is(err, errUnreachable), errors.Is(err, ErrConnLost):
			return vElsewhere, sent // the node may be down or cut off
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return vAgain, sent // the caller's context ended: the retry logic gives up
		}
		// The connection broke, or the dial or the handshake failed.
		return vElsewhere, sent
	}
	switch resp.Code {
	case wire.CodeNotLeader:
		if resp.Leader != "" && resp.Leader != addr {
			return vRedirect, false
		}
		return vElsewhere, false
	case wire.CodeNotReady, wire.CodeDivergent:
		return vElsewhere, false
	case wire.CodeShuttingDown:
		return vElsewhere, false // refused before it entered the log; else UnknownOutcome
	case wire.CodeOverloaded:
		return vAgain, false
	case wire.CodeUnknownOutcome, wire.CodeTimeout:
		return vAgain, true
	case wire.CodeSessionExpired, wire.CodeUnknownSession:
		return vExpired, false
	}
	return vDone, false
}
