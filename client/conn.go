package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// errUnreachable wraps the errors of connecting to a node: dial, handshake.
var errUnreachable = errors.New("cannot connect")

// reply is what a waiting caller receives: the Response, or why none will come.
type reply struct {
	resp wire.Response
	err  error
}

// conn is one pipelined connection to a node. Any number of goroutines may call
// roundTrip at once; each request gets a connection-unique ID, and the reader goroutine,
// which the conn owns, hands each Response to the caller waiting on its ID, in whatever
// order they arrive. When the connection breaks, every waiting caller gets an error
// wrapping ErrConnLost and the conn is dead for good: the Client dials a new one.
type conn struct {
	addr string // the address dialed
	node string // the node's id, from its Hello
	wc   *wire.Conn
	log  *slog.Logger

	mu      sync.Mutex
	pending map[uint64]*waiter     // guarded by mu; see waiter for the delivery rule
	nextID  uint64                 // guarded by mu; numbers requests and subscriptions alike
	subs    map[uint64]*attachment // live subscriptions by id; guarded by mu (subscribe.go)
	err     error                  // why the conn died, nil while alive; guarded by mu
	dead    atomic.Bool            // err != nil, readable without mu

	// lastHeard is when the node last sent a frame on the connection (the handshake
	// counts), and owingSince when pending last became non-empty; both in monoNow units.
	// They tell a silent node (paused, frozen, cut off) from a slow request.
	lastHeard  atomic.Int64
	owingSince atomic.Int64 // written under mu

	waiters sync.Pool     // of *waiter for this conn
	done    chan struct{} // closed when the reader goroutine has returned
}

// monoBase is the origin of monoNow.
var monoBase = time.Now()

// monoNow returns the time on the monotonic clock, in nanoseconds since monoBase.
func monoNow() int64 { return int64(time.Since(monoBase)) }

// dialConn connects to addr and does the handshake within timeout (and ctx). It does not
// start the reader: the caller calls start once it has decided to keep the conn.
func dialConn(ctx context.Context, cfg *Config, addr string) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	var nc net.Conn
	var err error
	if cfg.Dial != nil {
		nc, err = cfg.Dial(ctx, addr)
	} else {
		var d net.Dialer
		nc, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: dial %s: %w", errUnreachable, addr, err)
	}
	if cfg.TLS != nil {
		if nc, err = tlsHandshake(ctx, nc, cfg.TLS, addr); err != nil {
			return nil, fmt.Errorf("%w: TLS handshake with %s: %w", errUnreachable, addr, err)
		}
	}
	hello, err := wire.ClientHandshake(ctx, nc, cfg.ClusterID)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%w: handshake with %s: %w", errUnreachable, addr, err)
	}
	wc, err := wire.NewConn(nc, wire.ConnConfig{SendQueueFrames: 2*cfg.MaxInflight + 16})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%w: %s: %w", errUnreachable, addr, err)
	}
	return newConn(addr, hello.NodeID, wc, cfg.Logger.With("node", hello.NodeID, "addr", addr)), nil
}

// newConn returns the conn of wc, to the node node at addr; its reader is not started.
func newConn(addr, node string, wc *wire.Conn, log *slog.Logger) *conn {
	c := &conn{
		addr:    addr,
		node:    node,
		wc:      wc,
		log:     log,
		pending: map[uint64]*waiter{},
		done:    make(chan struct{}),
	}
	c.waiters.New = func() any { return newWaiter(c) }
	c.lastHeard.Store(monoNow())
	return c
}

// start starts the reader goroutine; wg.Done is called when it has returned.
func (c *conn) start(wg *sync.WaitGroup) {
	go c.readLoop(wg)
}

// readLoop delivers Responses to their callers until the connection fails.
func (c *conn) readLoop(wg *sync.WaitGroup) {
	defer wg.Done()
	defer close(c.done)
	var why error
	for {
		var resp wire.Response
		err := c.wc.RecvResponse(&resp)
		if err != nil {
			if why == nil {
				why = err
			}
			break
		}
		c.lastHeard.Store(monoNow())
		if resp.Sub != 0 {
			c.push(&resp)
			continue
		}
		if resp.ID == 0 {
			// A connection-level error, sent just before the node closes the connection.
			why = resp.Err()
			c.log.Warn("node reported a connection error", "err", why)
			continue
		}
		c.mu.Lock()
		if w, ok := c.pending[resp.ID]; ok {
			delete(c.pending, resp.ID)
			w.ch <- reply{resp: resp} // buffered and empty: the waiter's one reply
		}
		// Otherwise its caller gave up (context done, timeout); the answer is dropped.
		c.mu.Unlock()
	}
	_ = c.wc.Close() // stops the writer goroutine
	c.fail(fmt.Errorf("%w: %s: %w", ErrConnLost, c.addr, why))
}

// fail marks the conn dead and fails every waiting caller and subscription with err.
func (c *conn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
		c.dead.Store(true)
	}
	for id, w := range c.pending {
		delete(c.pending, id)
		w.ch <- reply{err: c.err}
	}
	subs := c.subs
	c.subs = nil
	err = c.err
	c.mu.Unlock()
	for _, a := range subs {
		a.sub.lost(a, err)
	}
}

// alive reports whether the conn can still carry requests.
func (c *conn) alive() bool { return !c.dead.Load() }

// heardSince reports whether the node has sent anything on the connection at or after t
// (monoNow units).
func (c *conn) heardSince(t int64) bool { return c.lastHeard.Load() >= t }

// silence returns how long the node has owed answers on the connection without sending
// anything: 0 if no request waits for an answer.
func (c *conn) silence() time.Duration {
	c.mu.Lock()
	owing := len(c.pending) > 0
	c.mu.Unlock()
	if !owing {
		return 0
	}
	return time.Duration(monoNow() - max(c.lastHeard.Load(), c.owingSince.Load()))
}

// roundTrip sends req (setting its ID) and waits for its Response, for at most timeout,
// until ctx is done, closing is closed or, once sent, deposed is closed (nil: never, for
// both). sent reports whether the request was handed to the connection; if it was and err
// is not nil, the node may have received it. An err wrapping ErrConnLost means the
// connection died; errTimedOut that timeout passed; a context error that ctx ended;
// ErrClosed that closing was closed; errDeposed that deposed was closed. A non-OK
// Response is returned with a nil err.
func (c *conn) roundTrip(ctx context.Context, req *wire.Request, timeout time.Duration, closing, deposed <-chan struct{}) (resp wire.Response, sent bool, err error) {
	if timeout <= 0 {
		return resp, false, errTimedOut
	}
	w := c.waiters.Get().(*waiter)
	c.mu.Lock()
	switch {
	case c.err != nil:
		err = c.err
	case isClosed(closing):
		err = ErrClosed // checked under mu: abortSends does not miss a waiter
	}
	if err != nil {
		c.mu.Unlock()
		c.waiters.Put(w)
		return resp, false, err
	}
	c.nextID++
	w.id, w.closable, w.ctx = c.nextID, closing != nil, ctx
	if len(c.pending) == 0 {
		c.owingSince.Store(monoNow())
	}
	c.pending[w.id] = w
	c.mu.Unlock()

	w.arm(timeout)
	quiet := true // no caller-context callback can still run
	req.ID = w.id
	// The send blocks only while the send queue is full: only then does the caller's
	// context need a callback (it ends the send); the usual send needs none.
	if err = c.wc.TrySendRequest(req); errors.Is(err, wire.ErrQueueFull) {
		if ctx.Done() != nil {
			stop := context.AfterFunc(ctx, w.cancel)
			err = c.wc.SendRequest((*sendCtx)(w), req)
			quiet = stop()
		} else {
			err = c.wc.SendRequest((*sendCtx)(w), req)
		}
	}
	if err != nil {
		c.forget(w)
		switch {
		case errors.Is(err, errSendAborted):
			switch {
			case ctx.Err() != nil:
				err = ctx.Err()
			case isClosed(closing):
				err = ErrClosed
			default:
				err = errTimedOut
			}
		case errors.Is(err, wire.ErrTooLarge):
		default:
			err = fmt.Errorf("%w: %s: %w", ErrConnLost, c.addr, err)
		}
		c.recycle(w, quiet)
		return resp, false, err
	}
	select {
	case r := <-w.ch:
		resp, err = r.resp, r.err
	case <-ctx.Done():
		c.forget(w)
		err = ctx.Err()
	case <-closing:
		c.forget(w)
		err = ErrClosed
	case <-deposed:
		c.forget(w)
		err = errDeposed
	}
	c.recycle(w, quiet)
	return resp, true, err
}

// forget takes w out of pending: its caller no longer waits. A reply delivered before is
// drained, so that w's channel is empty again.
func (c *conn) forget(w *waiter) {
	c.mu.Lock()
	mine := c.pending[w.id] == w
	if mine {
		delete(c.pending, w.id)
	}
	c.mu.Unlock()
	if !mine {
		<-w.ch // delivered under mu before we looked: it is there
	}
}

// recycle stops w's timer and returns w to the pool if that is safe (see waiter); quiet
// reports that no caller-context callback can still run. w is out of pending.
func (c *conn) recycle(w *waiter, quiet bool) {
	stopped := w.timer.Stop()
	w.ctx = nil
	if stopped && quiet && w.reusable() {
		c.waiters.Put(w)
	}
}

// abortSends ends the sends of the waiting requests that watch the client's closing (all
// but Close's own), should they be blocked on a full send queue. Client.Close calls it
// after closing: a request registered later sees closing closed and is not sent.
func (c *conn) abortSends() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.pending {
		if w.closable {
			w.abortLocked()
		}
	}
}

// isClosed reports whether ch is closed; a nil ch never is.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// close closes the connection and waits for the reader goroutine, which fails every
// waiting caller. The conn must have been started.
func (c *conn) close() {
	_ = c.wc.Close()
	<-c.done
}

// discard closes a conn whose reader was never started.
func (c *conn) discard() { _ = c.wc.Close() }
