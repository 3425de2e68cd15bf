package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

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
	pending map[uint64]chan<- reply // guarded by mu
	nextID  uint64                  // guarded by mu
	err     error                   // why the conn died, nil while alive; guarded by mu

	done chan struct{} // closed when the reader goroutine has returned
}

// dialConn connects to addr and does the handshake within timeout (and ctx). It does not
// start the reader: the caller calls start once it has decided to keep the conn.
func dialConn(ctx context.Context, cfg *Config, addr string) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: dial %s: %w", errUnreachable, addr, err)
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
	return &conn{
		addr:    addr,
		node:    hello.NodeID,
		wc:      wc,
		log:     cfg.Logger.With("node", hello.NodeID, "addr", addr),
		pending: map[uint64]chan<- reply{},
		done:    make(chan struct{}),
	}, nil
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
		if resp.ID == 0 {
			// A connection-level error, sent just before the node closes the connection.
			why = resp.Err()
			c.log.Warn("node reported a connection error", "err", why)
			continue
		}
		c.mu.Lock()
		ch, ok := c.pending[resp.ID]
		delete(c.pending, resp.ID)
		c.mu.Unlock()
		if ok {
			ch <- reply{resp: resp} // buffered; each channel gets exactly one reply
		}
		// Otherwise its caller gave up (context done); the answer is dropped.
	}
	_ = c.wc.Close() // stops the writer goroutine
	c.fail(fmt.Errorf("%w: %s: %w", ErrConnLost, c.addr, why))
}

// fail marks the conn dead and fails every waiting caller with err.
func (c *conn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
	for id, ch := range c.pending {
		ch <- reply{err: c.err}
		delete(c.pending, id)
	}
}

// alive reports whether the conn can still carry requests.
func (c *conn) alive() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err == nil
}

// roundTrip sends req (setting its ID) and waits for its Response, until ctx is done. sent
// reports whether the request was handed to the connection; if it was and err is not
// nil, the node may have received it. An err wrapping ErrConnLost means the connection
// died; a context error means ctx ended. A non-OK Response is returned with a nil err.
func (c *conn) roundTrip(ctx context.Context, req *wire.Request) (resp wire.Response, sent bool, err error) {
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.err != nil {
		err = c.err
		c.mu.Unlock()
		return resp, false, err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()

	req.ID = id
	if err := c.wc.SendRequest(ctx, req); err != nil {
		c.forget(id)
		if ctx.Err() == nil && !errors.Is(err, wire.ErrTooLarge) {
			err = fmt.Errorf("%w: %s: %w", ErrConnLost, c.addr, err)
		}
		return resp, false, err
	}
	select {
	case r := <-ch:
		return r.resp, true, r.err
	case <-ctx.Done():
		c.forget(id)
		return resp, true, ctx.Err()
	}
}

// forget drops the waiter for id, whose caller no longer waits.
func (c *conn) forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// close closes the connection and waits for the reader goroutine, which fails every
// waiting caller. The conn must have been started.
func (c *conn) close() {
	_ = c.wc.Close()
	<-c.done
}

// discard closes a conn whose reader was never started.
func (c *conn) discard() { _ = c.wc.Close() }
