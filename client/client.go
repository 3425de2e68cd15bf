package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// Client is a connection to a Lockstep cluster: one pipelined connection per node it
// talks to, the leader it currently believes in, and one client session. It is safe for
// concurrent use by any number of goroutines. Close it when done.
type Client struct {
	cfg Config
	log *slog.Logger

	// ctx is cancelled by Close. Operations do not derive their contexts from it: every
	// place an operation waits (the window, a slot, a dial, an answer, a pause) selects on
	// closing, its Done channel, as well, and ends with ErrClosed. Only dials and group
	// members' heartbeats derive a context from it.
	ctx     context.Context
	cancel  context.CancelFunc
	closing <-chan struct{}
	wg      sync.WaitGroup // the connections' reader goroutines and group members' heartbeats

	mu         sync.Mutex
	closed     bool
	pool       map[string]*poolEntry // by address
	candidates []string              // seeds, then addresses learned from hints; bounded
	leader     string                // the address requests go to now
	rotation   int                   // next candidate to try when the leader guess fails
	anyNext    int                   // next candidate for a ReadAny request

	// Leader tracking (leader.go). term is the highest Raft term a probe has seen, 0
	// before the first; the guess never moves to a leader of an older one. distrust holds
	// the nodes suspected of being unresponsive, with the term they were believed to lead:
	// hints naming them are not followed, only a probe brings them back. probing is set
	// while a probe runs; probeWait, while it is in its first round, is closed at its end.
	// deposed is closed, and replaced, when a probe moves the guess, or names it in a
	// newer term than leaderTerm: attempts waiting at a former guess end.
	term       uint64
	leaderTerm uint64 // the term in which a probe named the guess; 0 if it came otherwise
	distrust   map[string]uint64
	rechecking map[string]bool // the suspects being asked whether they answer again
	probing    bool
	probeWait  chan struct{}
	deposed    chan struct{}
	// namedTerm is the highest term in which a probe named a leader; elected is closed,
	// and replaced, when it rises: a new leader is known, and the retry pauses end.
	namedTerm uint64
	elected   chan struct{}

	sess sessions

	// free bounds the session-less requests in flight: a slot is a token in the channel.
	free chan struct{}

	encoders sync.Pool // of *argsBuffer
	decoders sync.Pool // of *resultDecoder
}

// poolEntry is the connection to one address, or the dial in progress.
type poolEntry struct {
	c       *conn
	dialing chan struct{} // non-nil while a dial is in progress; closed when it ends
}

// Dial returns a Client for the cluster of cfg.Addrs: it connects to a seed, finds the
// leader and opens a session. It waits for a leader as long as ctx allows, whatever
// cfg.MaxRetries says (which bounds the retries of requests): a cluster that is starting
// or electing, or whose nodes cannot be reached yet, makes Dial wait, not fail, so give
// ctx a deadline. It fails at once for an invalid cfg (ErrBadConfig), a node of another
// cluster (ErrClusterMismatch) or another protocol (ErrProtocolVersion, ErrSpeaksHTTP).
// The Client reconnects by itself when connections break; ctx bounds only Dial.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	c, err := Open(cfg)
	if err != nil {
		return nil, err
	}
	_, err = c.session(ctx, true)
	if err != nil {
		err = c.opErr(err)
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close closes the session (best effort, on an already open connection to the leader
// and within RequestTimeout), then every connection, and waits for the client's
// goroutines. Operations still running return ErrClosed; a request in flight at that
// moment may or may not have run. Close is idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	var leader *conn
	if e := c.pool[c.leader]; e != nil {
		leader = e.c
	}
	conns := c.conns()
	c.mu.Unlock()
	c.cancel()
	for _, cn := range conns {
		cn.abortSends()
	}

	if id := c.sess.closeAll(); id != 0 && leader != nil && leader.alive() {
		req := &wire.Request{Op: wire.OpCloseSession, Session: id}
		resp, _, err := leader.roundTrip(context.Background(), req, c.cfg.RequestTimeout, nil, nil)
		if err == nil {
			err = resp.Err()
		}
		if err != nil {
			c.log.Debug("closing the session failed", "session", id, "err", err)
		}
	}

	c.mu.Lock()
	conns = c.conns()
	c.mu.Unlock()
	for _, cn := range conns {
		cn.close()
	}
	c.wg.Wait()
	return nil
}

// conns returns the pooled connections. c.mu is held.
func (c *Client) conns() []*conn {
	conns := make([]*conn, 0, len(c.pool))
	for _, e := range c.pool {
		if e.c != nil {
			conns = append(conns, e.c)
		}
	}
	return conns
}

// isClosing reports whether Close has been called.
func (c *Client) isClosing() bool { return isClosed(c.closing) }

// opErr returns the error an operation that failed with err returns to its caller: one
// wrapping ErrClosed if the client has closed (the operation ended for that reason, or at
// the same time), else err with its wire errors translated (publicErr). Every exported
// method returns its errors through it.
func (c *Client) opErr(err error) error {
	if err != nil && c.isClosing() && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w (%v)", ErrClosed, err)
	}
	return publicErr(err)
}

// liveConn returns the live connection to addr, nil if there is none (connTo dials it),
// or ErrClosed. It never waits.
func (c *Client) liveConn(addr string) (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if e := c.pool[addr]; e != nil && e.c != nil && e.c.alive() {
		return e.c, nil
	}
	return nil, nil
}

// connTo returns the live connection to addr, dialing it if there is none. Concurrent
// callers share one dial. ctx must end when the client closes.
func (c *Client) connTo(ctx context.Context, addr string) (*conn, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		e := c.pool[addr]
		if e == nil {
			e = &poolEntry{}
			c.pool[addr] = e
		}
		if e.c != nil && e.c.alive() {
			cn := e.c
			c.mu.Unlock()
			return cn, nil
		}
		if wait := e.dialing; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		old := e.c
		e.c = nil
		wait := make(chan struct{})
		e.dialing = wait
		c.mu.Unlock()

		if old != nil {
			old.close() // dead already; this waits for its reader
		}
		cn, err := dialConn(ctx, &c.cfg, addr)
		c.mu.Lock()
		e.dialing = nil
		close(wait)
		if err == nil && c.closed {
			cn.discard()
			cn, err = nil, ErrClosed
		}
		if err == nil {
			e.c = cn
			c.wg.Add(1)
			cn.start(&c.wg)
		}
		c.mu.Unlock()
		if err == nil {
			c.log.Debug("connected", "addr", addr, "node", cn.node)
		}
		return cn, err
	}
}

// leaderAddr returns the address the client currently sends leader requests to.
func (c *Client) leaderAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

// redirect makes hint the leader guess, if the guess was still from, and remembers it.
// It reports false, and starts a probe, if hint names a distrusted node: the node that
// gave it may not know yet that its leader stopped answering, so a probe, which sees
// terms, decides.
func (c *Client) redirect(from, hint string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.learn(hint)
	if _, bad := c.distrust[hint]; bad {
		c.log.Debug("not following a hint to a suspected node", "from", from, "to", hint)
		c.startProbeLocked()
		return false
	}
	if c.leader == from && hint != from {
		c.log.Debug("following leader hint", "from", from, "to", hint)
		c.leader, c.leaderTerm = hint, 0
	}
	return true
}

// rotate moves the leader guess to the next candidate, if it was still from: from failed
// without naming the leader.
func (c *Client) rotate(from string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rotateLocked(from)
}

// rotateLocked moves the leader guess to the next candidate that is not distrusted (or, if
// every other one is, to the next one), if it was still from. c.mu is held.
func (c *Client) rotateLocked(from string) {
	if c.leader != from {
		return // another request moved it already
	}
	n := len(c.candidates)
	pick := -1 // the candidate chosen, by index
	for i := range n {
		j := (c.rotation + i) % n
		a := c.candidates[j]
		if a == from {
			continue
		}
		if _, bad := c.distrust[a]; !bad {
			pick = j
			break
		}
		if pick < 0 {
			pick = j // the first distrusted one, if no other will do
		}
	}
	next := from // the only candidate
	if pick >= 0 {
		next = c.candidates[pick]
		c.rotation = pick + 1
	}
	c.leader, c.leaderTerm = next, 0
	c.log.Debug("trying another node", "from", from, "to", c.leader)
}

// learn adds addr to the candidates if it is new and there is room. c.mu is held.
func (c *Client) learn(addr string) {
	if addr != "" && len(c.candidates) < maxCandidates && !slices.Contains(c.candidates, addr) {
		c.candidates = append(c.candidates, addr)
	}
}

// anyAddr returns the next candidate for a request any replica can serve, round robin.
func (c *Client) anyAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	addr := c.candidates[c.anyNext%len(c.candidates)]
	c.anyNext++
	return addr
}

// acquireFree takes a session-less request slot, waiting within ctx until the client
// closes.
func (c *Client) acquireFree(ctx context.Context) error {
	select {
	case c.free <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closing:
		return ErrClosed
	}
}

func (c *Client) releaseFree() { <-c.free }

// backoff waits before retry number n (from 0), within ctx until the client closes:
// RetryBackoff doubled n times, capped at MaxRetryBackoff, with jitter in its upper half.
// The pause ends early when a probe names a leader in a newer term than any before
// (leader.go): the leader the retries were waiting for has been elected, and a pause that
// grew long while the cluster had none would otherwise outlast the election.
func (c *Client) backoff(ctx context.Context, n int) error {
	c.mu.Lock()
	elected := c.elected
	c.mu.Unlock()
	d := c.cfg.RetryBackoff << min(n, 20)
	if d > c.cfg.MaxRetryBackoff || d <= 0 {
		d = c.cfg.MaxRetryBackoff
	}
	if d > 1 {
		d = d/2 + rand.N(d/2)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-elected:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closing:
		return ErrClosed
	}
}

// retriesLeft reports whether attempt (from 0) may be followed by another.
func (c *Client) retriesLeft(attempt int) bool {
	return c.cfg.MaxRetries < 0 || attempt < c.cfg.MaxRetries
}
