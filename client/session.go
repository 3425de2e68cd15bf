package client

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// session is one client session as the client sees it: its id and the bookkeeping of its
// sequence numbers. Sequence numbers are assigned in increasing order and finish in any
// order; ack is the highest seq such that every seq up to it has finished, which is the
// AckThrough every request carries. The fields are guarded by sessions.mu.
type session struct {
	id   uint64
	next uint64 // the next seq to assign, from 1
	ack  uint64 // every seq ≤ ack has finished
	// done marks the finished seqs above ack: seq s is done[s%len(done)]. Seqs in flight
	// lie in (ack, ack+len(done)], so no two share an entry.
	done []bool
	// dead is set when the cluster reported the session expired; nothing is assigned in it
	// any more.
	dead bool
	// changed is closed, and replaced, when the session dies, or when ack advances while
	// a request waits for room in the window (waited): it wakes those requests.
	changed chan struct{}
	// waited is set when a request takes changed to wait on, cleared when changed is
	// replaced, so that a release nobody waits for allocates nothing.
	waited bool
}

// slot is a sequence number of a session, held by one request from its assignment until
// the request finishes.
type slot struct {
	s   *session
	seq uint64
}

// sessions holds the client's current session and the opening of a new one.
type sessions struct {
	mu      sync.Mutex
	window  int           // at most window seqs outstanding above ack (Config.MaxInflight)
	cur     *session      // the live session; nil before the first open or after it died
	opening chan struct{} // non-nil while a session is being opened; closed when it ends
	closed  bool          // the client closed: no more sessions are opened
}

func (ss *sessions) init(window int) { ss.window = window }

// newSession returns the bookkeeping of a session the cluster just opened.
func (ss *sessions) newSession(id uint64) *session {
	return &session{id: id, next: 1, done: make([]bool, ss.window), changed: make(chan struct{})}
}

// session returns the live session, opening one if there is none. Concurrent callers
// share one open; if it fails, each caller tries again under its own context. It waits
// within ctx until the client closes. An open it starts retries until ctx ends if
// untilCtx (Dial), else within Config.MaxRetries.
func (c *Client) session(ctx context.Context, untilCtx bool) (*session, error) {
	ss := &c.sess
	for {
		ss.mu.Lock()
		switch {
		case ss.closed:
			ss.mu.Unlock()
			return nil, ErrClosed
		case ss.cur != nil:
			s := ss.cur
			ss.mu.Unlock()
			return s, nil
		case ss.opening != nil:
			wait := ss.opening
			ss.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-c.closing:
				return nil, ErrClosed
			}
		}
		wait := make(chan struct{})
		ss.opening = wait
		ss.mu.Unlock()

		id, err := c.openSession(ctx, untilCtx)

		ss.mu.Lock()
		ss.opening = nil
		close(wait)
		var s *session
		if err == nil && !ss.closed {
			s = ss.newSession(id)
			ss.cur = s
		}
		ss.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if s == nil {
			return nil, ErrClosed // the orphaned session expires by itself
		}
		c.log.Debug("session opened", "session", id)
		return s, nil
	}
}

// openSession opens a session through the leader, retrying until ctx ends if untilCtx,
// else within Config.MaxRetries. OpenSession is not idempotent: a retry after an unknown
// outcome may leave an unused session behind, which the cluster expires.
func (c *Client) openSession(ctx context.Context, untilCtx bool) (uint64, error) {
	resp, err := c.callRetry(ctx, retry{what: "open session", untilCtx: untilCtx}, &wire.Request{Op: wire.OpOpenSession}, true)
	var answer *wire.Error
	if errors.As(err, &answer) && err == error(answer) {
		// A node's definite answer (a permission refusal, say), returned as it came: say
		// what it answered, as the errors of retries do.
		err = fmt.Errorf("client: open session: %w", err)
	}
	if err != nil {
		return 0, err
	}
	if resp.Session == 0 {
		return 0, fmt.Errorf("client: open session: %w: the answer names no session", ErrMalformed)
	}
	return resp.Session, nil
}

// acquire assigns the next sequence number of the live session, waiting within ctx (until
// the client closes) while the session has window seqs outstanding: then seq - AckThrough
// never exceeds the window the servers keep, whatever order requests finish in.
func (c *Client) acquire(ctx context.Context) (slot, error) {
	ss := &c.sess
	for {
		s, err := c.session(ctx, false)
		if err != nil {
			return slot{}, err
		}
		ss.mu.Lock()
		if !s.dead && s.next-s.ack <= uint64(ss.window) {
			sl := slot{s: s, seq: s.next}
			s.next++
			ss.mu.Unlock()
			return sl, nil
		}
		wait := s.changed
		s.waited = true
		ss.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return slot{}, ctx.Err()
		case <-c.closing:
			return slot{}, ErrClosed
		}
	}
}

// release finishes sl's seq: its result arrived, or the client gave up on it. Either
// way the client will not send it again, so AckThrough may pass it; a late copy of the
// request is then refused by the cluster rather than run. Releasing the zero slot is a
// no-op. It takes amortized constant time: each seq is passed by ack once.
func (ss *sessions) release(sl slot) {
	s := sl.s
	if s == nil {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if sl.seq <= s.ack || sl.seq >= s.next {
		panic(fmt.Sprintf("client: invariant violated: releasing seq %d of session %d outside (ack %d, next %d)",
			sl.seq, s.id, s.ack, s.next))
	}
	n := uint64(len(s.done))
	s.done[sl.seq%n] = true
	advanced := false
	for s.done[(s.ack+1)%n] {
		s.done[(s.ack+1)%n] = false
		s.ack++
		advanced = true
	}
	if advanced && s.waited {
		s.wake()
	}
}

// wake wakes the requests waiting on s.changed. sessions.mu is held.
func (s *session) wake() {
	close(s.changed)
	s.changed = make(chan struct{})
	s.waited = false
}

// ackThrough returns s's AckThrough: every seq up to it has finished.
func (ss *sessions) ackThrough(s *session) uint64 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return s.ack
}

// expire records that the cluster no longer knows s; the next request opens a new one.
func (ss *sessions) expire(s *session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s.dead {
		return
	}
	s.dead = true
	s.wake()
	if ss.cur == s {
		ss.cur = nil
	}
}

// closeAll stops opening sessions and returns the id of the live one, 0 if none.
func (ss *sessions) closeAll() uint64 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.closed = true
	if ss.cur == nil {
		return 0
	}
	id := ss.cur.id
	ss.cur.dead = true
	ss.cur.wake()
	ss.cur = nil
	return id
}

// current returns the live session's id, 0 if none.
func (ss *sessions) current() uint64 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.cur == nil {
		return 0
	}
	return ss.cur.id
}
