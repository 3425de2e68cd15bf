package client

import (
	"context"
	"errors"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// Leader tracking. The client's leader guess (Client.leader) moves on three kinds of
// evidence: a follower's NotLeader hint (no term), a failed attempt (rotate to the next
// candidate), and a probe: OpStatus asked of the other nodes, whose answers carry the
// leader they know and the term. Only probes know terms; the client keeps the highest
// term any answer carried (Client.term) and never moves its guess to a leader of an older
// one. (With Raft's pre-vote, a node reaches a new term only once a majority agreed that
// the old leader is gone.)
//
// A node is suspected when an attempt at it, as the leader guess, timed out (on
// RequestTimeout or on the caller's deadline) without the node sending anything on the
// connection since the attempt began, when connecting to it failed, or when it has owed
// answers for SuspectAfter without sending a byte (the watchdog). Suspecting a node puts
// it in Client.distrust, with the term it was believed to lead, and starts a probe:
//
//   - Requests bound for a distrusted leader guess wait for the probe's first round
//     (within their contexts) instead of going straight back to it.
//   - A NotLeader hint naming a distrusted node is not followed (followers go on naming a
//     frozen leader until their heartbeat times out): the request tries another node and
//     a probe is started instead.
//   - An answer naming leader L in term T is taken if T is not older than Client.term:
//     the guess moves to L and L is trusted again. So the client returns to a suspect
//     only if the others still name it leader in the current term (or a later one).
//     Unless L is the guess and was named by a probe in T already (Client.leaderTerm),
//     every attempt still waiting at a former guess ends (errDeposed) and is retried at
//     L at once, with the same session and Seq.
//   - A probe round asks every node but the suspects and waits for their answers. It
//     also asks each suspect but the guess, in the background, without waiting: a
//     suspect that answers is trusted again, frozen no more.
//   - A leader named in a term newer than any named before (Client.namedTerm), and not
//     a suspect, also ends every retry pause (backoff): the pauses grow while there is
//     no leader, and would otherwise outlast the election.
//   - A round in which nodes answered but none names a leader (an election is running)
//     moves the guess off the suspect, releases the waiting requests, and is repeated
//     every probePause, for at most RequestTimeout, until a leader is named. A round
//     nobody answers leaves the guess alone: the suspect is the best there is.

// probePause is the pause between the rounds of a probe that found no leader.
const probePause = 50 * time.Millisecond

// errDeposed is the error of an attempt abandoned because a probe found the leader
// elsewhere while it waited: its answer may never come.
var errDeposed = errors.New("the node was found deposed by a newer leader")

// target returns the address to send a leader request to, and the channel that closes if
// a probe moves the guess away from it. If the guess is distrusted and a probe is in its first
// round, it waits for that round, within ctx and until the client closes.
func (c *Client) target(ctx context.Context) (string, <-chan struct{}, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return "", nil, ErrClosed
		}
		addr := c.leader
		if _, bad := c.distrust[addr]; bad && c.probeWait != nil {
			wait := c.probeWait
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return "", nil, ctx.Err()
			case <-c.closing:
				return "", nil, ErrClosed
			}
		}
		deposed := c.deposed
		c.mu.Unlock()
		return addr, deposed, nil
	}
}

// suspect records that addr, if it is still the leader guess, failed to answer, and
// starts a probe.
func (c *Client) suspect(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.leader != addr {
		return // the guess moved already
	}
	if _, ok := c.distrust[addr]; !ok {
		c.log.Debug("suspecting the leader", "addr", addr, "term", c.term)
		c.distrust[addr] = c.term
	}
	c.startProbeLocked()
}

// startProbeLocked starts a probe unless one runs or the client closed. c.mu is held.
func (c *Client) startProbeLocked() {
	if c.probing || c.closed {
		return
	}
	c.probing = true
	c.probeWait = make(chan struct{})
	c.wg.Add(1)
	go c.probe()
}

// releaseProbeWaitLocked lets the requests waiting for the probe's first round go on.
// c.mu is held.
func (c *Client) releaseProbeWaitLocked() {
	if c.probeWait != nil {
		close(c.probeWait)
		c.probeWait = nil
	}
}

// probe asks the nodes who leads, in rounds, until a leader is named, nobody answers, the
// client closes or RequestTimeout passes; see the comment at the top of this file.
func (c *Client) probe() {
	defer c.wg.Done()
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.RequestTimeout)
	defer cancel()
	defer func() {
		c.mu.Lock()
		c.probing = false
		c.releaseProbeWaitLocked()
		c.mu.Unlock()
	}()
	for {
		answered, named := c.probeRound(ctx)
		c.mu.Lock()
		if answered && !named {
			if _, bad := c.distrust[c.leader]; bad {
				c.rotateLocked(c.leader)
			}
		}
		c.releaseProbeWaitLocked()
		c.mu.Unlock()
		if named || !answered {
			return
		}
		t := time.NewTimer(probePause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// probeRound asks every candidate but the distrusted ones for its status, at once, and
// applies each answer as it comes, for at most SuspectAfter (or until ctx ends). It
// reports whether any node answered and whether any answer named a leader the client
// took.
func (c *Client) probeRound(ctx context.Context) (answered, named bool) {
	c.mu.Lock()
	var addrs, suspects []string
	for _, a := range c.candidates {
		if _, bad := c.distrust[a]; bad {
			suspects = append(suspects, a)
		} else {
			addrs = append(addrs, a)
		}
	}
	for _, a := range suspects {
		if a != c.leader { // the guess: the requests at it, and this round, tell
			c.recheckLocked(a)
		}
	}
	c.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, c.cfg.SuspectAfter)
	defer cancel()
	type answer struct {
		addr string
		st   wire.Status
		err  error
	}
	answers := make(chan answer, len(addrs))
	for _, a := range addrs {
		go func() {
			resp, err := c.at(rctx, a, &wire.Request{Op: wire.OpStatus})
			var st wire.Status
			if err == nil {
				err = c.decode(resp.Value, &st)
			}
			answers <- answer{a, st, err}
		}()
	}
	for range addrs {
		an := <-answers
		if an.err != nil {
			continue
		}
		answered = true
		if c.takeStatus(an.addr, &an.st) {
			named = true
		}
	}
	return answered, named
}

// recheckLocked asks the suspect addr for its status, in the background, unless that is
// under way already: if it answers within SuspectAfter it is trusted again (and its
// answer taken like any other). c.mu is held.
//
// Without it a suspect stayed one until a probe named it leader again, and probes do not
// ask suspects: once the leaders of two or three pauses in a row had been suspected there
// was nobody left to ask, and requests waited for the frozen node (issue 20 item 13).
func (c *Client) recheckLocked(addr string) {
	if c.closed || c.rechecking[addr] {
		return
	}
	c.rechecking[addr] = true
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(c.ctx, c.cfg.SuspectAfter)
		resp, err := c.at(ctx, addr, &wire.Request{Op: wire.OpStatus})
		cancel()
		var st wire.Status
		if err == nil {
			err = c.decode(resp.Value, &st)
		}
		if err == nil {
			c.takeStatus(addr, &st)
		}
		c.mu.Lock()
		delete(c.rechecking, addr)
		if err == nil {
			if _, bad := c.distrust[addr]; bad {
				c.log.Debug("a suspect answers again", "addr", addr, "term", st.Term)
				delete(c.distrust, addr)
			}
		}
		c.mu.Unlock()
	}()
}

// takeStatus learns the addresses in st, the status of the node at addr, and moves the
// leader guess to the leader st names unless st's term is older than the client's. It
// reports whether st named a leader the client took.
func (c *Client) takeStatus(addr string, st *wire.Status) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range st.Nodes {
		c.learn(n.ClientAddr)
	}
	c.term = max(c.term, st.Term)
	l := st.LeaderClientAddr
	if l == "" || st.Term < c.term {
		return false
	}
	c.learn(l)
	if l != c.leader || st.Term > c.leaderTerm {
		// The guess moves, or is confirmed in a newer term than the one it was named in
		// (it got there by a hint or a rotation, or it was named in an older term):
		// attempts still waiting at a former guess may never be answered.
		c.log.Debug("a probe found the leader", "from", c.leader, "to", l, "term", st.Term, "by", addr)
		c.leader = l
		close(c.deposed)
		c.deposed = make(chan struct{})
	}
	c.leaderTerm = st.Term
	if _, suspect := c.distrust[l]; st.Term > c.namedTerm && !suspect {
		// A leader of a newer term than any named before, and not one the client found
		// unresponsive (followers name a dead leader until their heartbeat times out):
		// the retries pausing for the cluster to elect one go on at once.
		c.namedTerm = st.Term
		close(c.elected)
		c.elected = make(chan struct{})
	}
	delete(c.distrust, l)
	c.releaseProbeWaitLocked()
	return true
}

// watch is the watchdog: every SuspectAfter/8 it suspects the leader guess if the node
// has owed answers for SuspectAfter without sending anything, until the client closes.
func (c *Client) watch() {
	defer c.wg.Done()
	t := time.NewTicker(max(c.cfg.SuspectAfter/8, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-c.closing:
			return
		}
		c.mu.Lock()
		addr, probing := c.leader, c.probing
		var cn *conn
		if e := c.pool[addr]; e != nil {
			cn = e.c
		}
		c.mu.Unlock()
		if !probing && cn != nil && cn.alive() && cn.silence() >= c.cfg.SuspectAfter {
			c.suspect(addr)
		}
	}
}

// timedOut reports whether err, of an attempt under ctx, says that the attempt's time
// (RequestTimeout or ctx's deadline) ran out.
func timedOut(ctx context.Context, err error) bool {
	return errors.Is(err, errTimedOut) || errors.Is(err, errAttemptTimeout) ||
		(errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded))
}
