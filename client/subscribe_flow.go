package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// The flow of a subscription's records: the connection's reader hands pushes to deliver,
// which checks them and fills the feeds' buffers; Next hands the buffers out and repays
// the credit they used (subscribe.go has the protocol and the supervisor).

// deliver takes a push of attachment a; the connection's reader calls it, and it never
// blocks.
func (s *Subscription) deliver(a *attachment, resp *wire.Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := a.feed
	if f.att != a {
		return // detached: a late push of an attachment given up
	}
	if resp.Code != wire.CodeOK {
		f.att = nil // the reader took it off the connection
		s.troubleLocked(&subFault{feed: f, err: resp.Err(), next: resp.NextOffset})
		return
	}
	if err := entryOrderErr(resp.Entries, f.next, resp.NextOffset); err != nil {
		s.badPushLocked(a, fmt.Errorf("%w: %w", errBadPush, err))
		return
	}
	if held := int64(len(f.buf)) + f.lentRecs + int64(len(resp.Entries)); held > int64(s.cfg.records) {
		s.badPushLocked(a, fmt.Errorf("%w: %d records held, credit window %d", errBadPush, held, s.cfg.records))
		return
	}
	f.buf = slices.Grow(f.buf, len(resp.Entries)) // one allocation a push, not log2(n)
	for i := range resp.Entries {
		e := &resp.Entries[i]
		f.buf = append(f.buf, recordFromWire(f.part, e))
		f.bufBytes += int64(wire.StreamRecordSize(e))
	}
	f.next = resp.NextOffset
	f.fence = max(f.fence, resp.Index)
	if len(resp.Entries) > 0 {
		signal(s.arrived)
	}
}

// badPushLocked gives up attachment a after a push that breaks the protocol.
func (s *Subscription) badPushLocked(a *attachment, err error) {
	a.feed.att = nil
	a.cn.dropSub(a.id) // lock order: Subscription.mu, then conn.mu (as in attach)
	s.troubleLocked(&subFault{feed: a.feed, err: err})
}

// Next waits for records and returns those that have arrived (at least one), in offset
// order per partition (partitions in ascending order), each with Partition and Offset set.
// Calling Next again tells the subscription the records it returned are consumed, which
// lets the node send more (see WithCredit). It returns ctx.Err() when ctx ends, and the
// error that ended the subscription once the records received before it are taken:
// ErrClosed after Close or the client's Close, an *OffsetTrimmedError when retention
// trimmed records not delivered yet, ErrUnknownStream when the stream was deleted.
func (s *Subscription) Next(ctx context.Context) ([]Record, error) {
	s.repay(ctx)
	for {
		s.mu.Lock()
		if errors.Is(s.err, ErrClosed) {
			err := s.err
			s.mu.Unlock()
			return nil, err
		}
		out := s.takeLocked()
		err := s.err
		s.mu.Unlock()
		if len(out) > 0 {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		select {
		case <-s.arrived:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// takeLocked hands out the buffered records of every feed, partitions in ascending order,
// and counts them as lent. One feed's buffer goes out as it is (the feed starts a new
// one); only records of several feeds are copied into one slice.
func (s *Subscription) takeLocked() []Record {
	var out []Record
	for _, f := range s.feeds {
		if len(f.buf) == 0 {
			continue
		}
		if out == nil {
			out = f.buf // the feed lets go of it below
		} else {
			out = append(out, f.buf...)
		}
		f.lentRecs += int64(len(f.buf))
		f.lentBytes += f.bufBytes
		f.buf, f.bufBytes = nil, 0
	}
	return out
}

// grant is credit to send to one attachment.
type grant struct {
	a           *attachment
	recs, bytes int64
}

// repay counts the records the last Next returned as consumed and grants the credit owed
// to each feed's node once it reaches half the window. A grant that cannot be sent stays
// owed; one to a connection that died is moot (the next attachment starts afresh).
func (s *Subscription) repay(ctx context.Context) {
	var grants []grant
	s.mu.Lock()
	for _, f := range s.feeds {
		f.owedRecs += f.lentRecs
		f.owedBytes += f.lentBytes
		f.lentRecs, f.lentBytes = 0, 0
		if f.att == nil || (f.owedRecs*2 < int64(s.cfg.records) && f.owedBytes*2 < s.cfg.bytes) {
			continue
		}
		grants = append(grants, grant{f.att, f.owedRecs, f.owedBytes})
		f.owedRecs, f.owedBytes = 0, 0
	}
	s.mu.Unlock()
	for _, g := range grants {
		err := g.a.cn.sendOneWay(ctx, &wire.Request{Op: wire.OpCredit, Sub: g.a.id,
			Max: uint32(min(g.recs, math.MaxUint32)), Bytes: uint64(g.bytes)})
		if err != nil {
			s.mu.Lock()
			if g.a.feed.att == g.a {
				g.a.feed.owedRecs += g.recs
				g.a.feed.owedBytes += g.bytes
			}
			s.mu.Unlock()
		}
	}
}

// addSub registers a on the connection under a new id.
func (c *conn) addSub(a *attachment) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	c.nextID++
	a.id = c.nextID
	if c.subs == nil {
		c.subs = map[uint64]*attachment{}
	}
	c.subs[a.id] = a
	return nil
}

// dropSub takes subscription id off the connection; true if it was there.
func (c *conn) dropSub(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.subs[id]
	delete(c.subs, id)
	return ok
}

// push hands a subscription's push to its attachment; an end push takes it off the
// connection. A push of a subscription the client gave up is dropped.
func (c *conn) push(resp *wire.Response) {
	c.mu.Lock()
	a := c.subs[resp.Sub]
	if a != nil && resp.Code != wire.CodeOK {
		delete(c.subs, resp.Sub)
	}
	c.mu.Unlock()
	if a != nil {
		a.sub.deliver(a, resp)
	}
}

// sendOneWay sends req without waiting for an answer. OpCredit has none; any other op
// gets a fresh ID, and its answer, finding no waiter, is dropped.
func (c *conn) sendOneWay(ctx context.Context, req *wire.Request) error {
	if req.Op != wire.OpCredit {
		c.mu.Lock()
		c.nextID++
		req.ID = c.nextID
		c.mu.Unlock()
	}
	return c.wc.SendRequest(ctx, req)
}
