package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/partition"
)

// Push subscriptions (wire.OpSubscribe). A subscription pushes the records of one stream
// partition to its client connection as this replica applies them, within the credit
// the client grants:
//
//  1. OpSubscribe registers it on the connection (at most Config.MaxSubscriptionsPerConn)
//     and starts its pusher goroutine, which the connection owns.
//  2. The pusher waits until the replica has applied the log up to Request.MinIndex (a
//     client moving the subscription from another replica asks for this, so nothing it
//     received there is missing here), checks the start offset against the stream and
//     answers the request: OK, or UnknownStream, OffsetTrimmed, OffsetPastEnd (after
//     pastEndGrace, in case this replica is only behind), NotReady.
//  3. Then, whenever it has credit and the partition has records from its next offset on,
//     it reads them from the applied state (the replica's ReadStream: no copy, no queue of
//     its own) and sends one push frame; when it has neither it waits for the FSM's
//     "applied" signal or a credit grant. No sleeping, no polling.
//  4. It ends with an end push (a Response with Sub and a non-OK code) when the replica
//     stops serving (NotReady, Divergent), the stream is deleted (UnknownStream) or
//     retention trimmed the records it was to send (OffsetTrimmed); silently on
//     OpUnsubscribe, when the connection closes, and when the node closes.
//
// Memory: a subscription holds its state (a few words) and, while it sends, one push of at
// most maxPushBytes (plus one record). What it sent waits in the connection's send queue,
// of which pushes may take only half (wire.Conn.SendPush): a client that stops reading its
// connection stalls its own subscriptions, nothing else; a client that reads but grants no
// credit gets nothing more. Nothing grows with the records a subscriber is behind.

// DefaultMaxSubscriptionsPerConn is the default of Config.MaxSubscriptionsPerConn.
const DefaultMaxSubscriptionsPerConn = 1024

const (
	// maxPushRecords and maxPushBytes bound one push frame: its records, and their sizes
	// (wire.StreamRecordSize) — past the first record, which always goes.
	maxPushRecords = maxStreamRead
	maxPushBytes   = 1 << 20
	// maxCreditRecords and maxCreditBytes bound a subscription's unused credit: a grant
	// that would pass them ends the subscription with BadArguments. The credit is the
	// client's promise to hold what it gets, not node memory; the bounds keep the counts
	// far from overflow.
	maxCreditRecords = math.MaxInt32
	maxCreditBytes   = 1 << 40
	// catchUpTimeout bounds the wait for Request.MinIndex; a replica that does not get there
	// in time answers NotReady and the client tries another.
	catchUpTimeout = 5 * time.Second
	// pastEndGrace is how long a subscription that starts past its partition's next offset
	// waits for this replica to apply the records up to it before it fails with
	// OffsetPastEnd. A replica that is caught up learns a commit within the leader's commit
	// timeout (tens of milliseconds).
	pastEndGrace = time.Second
)

// applySignal wakes the goroutines waiting for the replica to apply more of the log. The
// FSM fires it at the end of every apply (through the node's ApplyObserver) and when the
// replica diverges. Waiters take the channel before they look at the state, so an apply
// between their look and their wait still wakes them.
type applySignal struct {
	mu sync.Mutex
	ch chan struct{} // closed at the next fire; nil while nobody waits
}

// wait returns a channel closed at the next fire.
func (s *applySignal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// fire wakes every waiter. It never blocks and allocates nothing.
func (s *applySignal) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// subscription is one push subscription of a client connection.
type subscription struct {
	cc     *clientConn
	id     uint64
	stream string
	part   int
	next   uint64 // the offset to push from; owned by the pusher goroutine

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the pusher has returned

	mu          sync.Mutex
	creditRecs  int64         // records it may still send
	creditBytes int64         // bytes it may still send; below 0 by at most one record
	kick        chan struct{} // cap 1: credit arrived

	sentRecs, sentBytes atomic.Int64 // what it pushed, for tests and metrics
}

// subscriptions are the live subscriptions of one connection.
type subscriptions struct {
	mu     sync.Mutex
	byID   map[uint64]*subscription
	closed bool
	wg     sync.WaitGroup // the pushers
}

// subscribe handles OpSubscribe: it checks what needs no state, registers the
// subscription and starts its pusher, which answers the request.
func (cc *clientConn) subscribe(req *wire.Request) {
	n := cc.n
	P := n.state.Partitions()
	switch {
	case req.Sub == 0:
		cc.fail(req.ID, fmt.Errorf("%w: subscription id 0", wire.ErrBadArguments))
		return
	case req.Partition < 0 || int(req.Partition) >= P:
		cc.fail(req.ID, fmt.Errorf("%w: stream partition %d of %d", wire.ErrBadScope, req.Partition, P))
		return
	case req.Stream == "":
		cc.fail(req.ID, fmt.Errorf("%w: no stream named", wire.ErrBadArguments))
		return
	case uint64(req.Max) > maxCreditRecords || req.Bytes > maxCreditBytes:
		cc.fail(req.ID, fmt.Errorf("%w: credit of %d records, %d bytes: limit %d, %d", wire.ErrBadArguments,
			req.Max, req.Bytes, maxCreditRecords, maxCreditBytes))
		return
	}
	if err := n.ready(); err != nil {
		cc.fail(req.ID, err)
		return
	}
	ctx, cancel := context.WithCancel(n.ctx)
	s := &subscription{cc: cc, id: req.Sub, stream: req.Stream, part: int(req.Partition), next: req.Offset,
		ctx: ctx, cancel: cancel, done: make(chan struct{}), kick: make(chan struct{}, 1),
		creditRecs: int64(req.Max), creditBytes: int64(req.Bytes)}
	subs := &cc.subs
	subs.mu.Lock()
	var err error
	switch {
	case subs.closed:
		err = fmt.Errorf("%w: connection closing", wire.ErrShuttingDown)
	case subs.byID[s.id] != nil:
		err = fmt.Errorf("%w: subscription %d exists on this connection", wire.ErrBadArguments, s.id)
	case len(subs.byID) >= n.cfg.MaxSubscriptionsPerConn:
		err = fmt.Errorf("%w: %d subscriptions on this connection, limit %d", wire.ErrOverloaded,
			len(subs.byID), n.cfg.MaxSubscriptionsPerConn)
	}
	if err != nil {
		subs.mu.Unlock()
		cancel()
		cc.fail(req.ID, err)
		return
	}
	if subs.byID == nil {
		subs.byID = map[uint64]*subscription{}
	}
	subs.byID[s.id] = s
	subs.wg.Add(1)
	subs.mu.Unlock()
	n.metrics.subscriptions.Inc()
	go s.run(req.ID, req.MinIndex, req.Earliest)
}

// credit handles OpCredit, which has no answer.
func (cc *clientConn) credit(req *wire.Request) {
	cc.subs.mu.Lock()
	s := cc.subs.byID[req.Sub]
	cc.subs.mu.Unlock()
	if s == nil {
		return // ended meanwhile: the grant races with the end push
	}
	s.mu.Lock()
	s.creditRecs += int64(req.Max)
	s.creditBytes += int64(min(req.Bytes, maxCreditBytes))
	over := s.creditRecs > maxCreditRecords || s.creditBytes > maxCreditBytes
	s.mu.Unlock()
	if over {
		s.end(fmt.Errorf("%w: credit grant takes the subscription over %d records or %d bytes",
			wire.ErrBadArguments, maxCreditRecords, maxCreditBytes))
		return
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// unsubscribe handles OpUnsubscribe: it stops the pusher, then answers, so the answer
// follows the subscription's last push.
func (cc *clientConn) unsubscribe(req *wire.Request) {
	cc.subs.mu.Lock()
	s := cc.subs.byID[req.Sub]
	cc.subs.mu.Unlock()
	if s != nil {
		s.cancel()
		<-s.done
	}
	cc.reply(&wire.Response{ID: req.ID})
}

// closeSubscriptions stops every subscription of the connection and waits for the
// pushers; no new one starts.
func (cc *clientConn) closeSubscriptions() {
	subs := &cc.subs
	subs.mu.Lock()
	subs.closed = true
	for _, s := range subs.byID {
		s.cancel()
	}
	subs.mu.Unlock()
	subs.wg.Wait()
}

// remove takes s off its connection; true if it was there.
func (s *subscription) remove() bool {
	subs := &s.cc.subs
	subs.mu.Lock()
	defer subs.mu.Unlock()
	if subs.byID[s.id] != s {
		return false
	}
	delete(subs.byID, s.id)
	return true
}

// end ends s from the node's side with err, sent as the end push unless the connection
// or the node is closing or the client unsubscribed.
func (s *subscription) end(err error) {
	if !s.remove() {
		return
	}
	s.cancel()
	if s.cc.n.ctx.Err() != nil {
		return
	}
	resp := s.cc.n.streamErrorResponse(0, err)
	resp.Sub = s.id
	s.cc.send(&resp) // never dropped in silence: a client that does not read loses its connection
}

// streamErrorResponse is the Response that reports err of a stream read or subscription
// for request id, as clientConn.fail would, with NextOffset set to the first offset
// available (OffsetTrimmed) or the partition's next offset (OffsetPastEnd).
func (n *Node) streamErrorResponse(id uint64, err error) wire.Response {
	resp := wire.ErrorResponse(id, n.toWire(err))
	resp.Message = truncateMessage(resp.Message, maxMessageBytes)
	var trimmed *partition.OffsetTrimmedError
	var past *pastEndError
	switch {
	case errors.As(err, &trimmed):
		resp.NextOffset = trimmed.First
	case errors.As(err, &past):
		resp.NextOffset = past.next
	}
	return resp
}

// pastEndError is a subscription's start beyond its partition's next offset.
type pastEndError struct {
	stream     string
	part       int
	from, next uint64
}

func (e *pastEndError) Error() string {
	return fmt.Sprintf("stream %q partition %d: offset %d is past the end (next offset %d)", e.stream, e.part, e.from, e.next)
}

func (e *pastEndError) Unwrap() error { return wire.ErrOffsetPastEnd }

// streamErr translates a stream read's error into the wire catalogue.
func streamErr(err error) error {
	var trimmed *partition.OffsetTrimmedError
	switch {
	case errors.As(err, &trimmed):
		return fmt.Errorf("%w: %w", wire.ErrOffsetTrimmed, err)
	case errors.Is(err, partition.ErrUnknownStream):
		return fmt.Errorf("%w: %w", wire.ErrUnknownStream, err)
	}
	return err
}

// run is the pusher goroutine: it answers the subscribe request reqID, then pushes.
func (s *subscription) run(reqID, minIndex uint64, earliest bool) {
	n := s.cc.n
	defer func() {
		s.remove()
		s.cancel()
		close(s.done)
		n.metrics.subscriptions.Dec()
		s.cc.subs.wg.Done()
	}()
	if err := s.start(minIndex, earliest); err != nil {
		resp := n.streamErrorResponse(reqID, err)
		s.cc.reply(&resp)
		return
	}
	s.cc.reply(&wire.Response{ID: reqID, NextOffset: s.next, Index: n.state.Visible()})
	for {
		wake := n.applied.wait() // before looking: an apply from now on wakes us
		if err := n.ready(); err != nil {
			s.end(err)
			return
		}
		sent, err := s.push()
		if err != nil {
			if s.ctx.Err() == nil {
				s.end(err)
			}
			return
		}
		if sent {
			continue
		}
		select {
		case <-wake:
		case <-s.kick:
		case <-s.ctx.Done():
			return
		}
	}
}

// start waits until the replica has applied minIndex, then checks the start offset: the
// stream exists, the offset is not trimmed (with earliest, it moves up to the first
// offset instead) and not past the partition's next offset.
func (s *subscription) start(minIndex uint64, earliest bool) error {
	n := s.cc.n
	if minIndex > 0 {
		timer := time.NewTimer(catchUpTimeout)
		defer timer.Stop()
		for {
			wake := n.applied.wait()
			applied := n.state.Applied()
			if applied >= minIndex {
				break
			}
			select {
			case <-wake:
			case <-timer.C:
				return fmt.Errorf("%w: applied %d of the %d the subscription needs", ErrCatchingUp, applied, minIndex)
			case <-s.ctx.Done():
				return fmt.Errorf("%w: connection closing", wire.ErrShuttingDown)
			}
		}
	}
	var grace *time.Timer
	for {
		wake := n.applied.wait()
		if err := n.ready(); err != nil {
			return err
		}
		info, ok := n.state.StreamInfo(s.part, s.stream)
		switch {
		case !ok:
			return fmt.Errorf("%w: %q", wire.ErrUnknownStream, s.stream)
		case s.next < info.FirstOffset && earliest:
			s.next = info.FirstOffset
		case s.next < info.FirstOffset:
			return streamErr(&partition.OffsetTrimmedError{Stream: s.stream, Offset: s.next, First: info.FirstOffset})
		case s.next > info.NextOffset:
			// The offset may come from a replica ahead of this one (a consumer's stored
			// position, another replica's read): give this one pastEndGrace to apply it.
			if grace == nil {
				grace = time.NewTimer(pastEndGrace)
				defer grace.Stop()
			}
			select {
			case <-wake:
				continue
			case <-grace.C:
				return &pastEndError{stream: s.stream, part: s.part, from: s.next, next: info.NextOffset}
			case <-s.ctx.Done():
				return fmt.Errorf("%w: connection closing", wire.ErrShuttingDown)
			}
		}
		return nil
	}
}

// push sends the records from s.next on that the credit allows, in one frame; sent
// reports whether it sent any.
func (s *subscription) push() (sent bool, err error) {
	s.mu.Lock()
	recs, bytes := s.creditRecs, s.creditBytes
	s.mu.Unlock()
	if recs <= 0 || bytes <= 0 {
		return false, nil
	}
	n := s.cc.n
	read, next, err := n.state.ReadStream(s.part, s.stream, s.next, int(min(recs, maxPushRecords)))
	if err != nil {
		return false, streamErr(err)
	}
	if next < s.next {
		// The stream was deleted and created again: its offsets started over.
		return false, &pastEndError{stream: s.stream, part: s.part, from: s.next, next: next}
	}
	if len(read) == 0 {
		s.next = next // past a compaction gap at the end, if any
		return false, nil
	}
	budget := min(bytes, maxPushBytes)
	resp := wire.Response{Sub: s.id, Entries: make([]wire.StreamRecord, 0, len(read))}
	var size int64
	for i := range read {
		r := &read[i]
		rec := wire.StreamRecord{Offset: r.Offset, Key: r.Key, Value: r.Value, EventTime: r.EventTime}
		sz := int64(wire.StreamRecordSize(&rec))
		if i > 0 && size+sz > budget {
			next = r.Offset
			break
		}
		size += sz
		resp.Entries = append(resp.Entries, rec)
	}
	resp.NextOffset = next
	// Read after the records: every entry whose records the push holds is at or before it.
	resp.Index = n.state.Visible()
	if err := s.cc.c.SendPush(s.ctx, &resp); err != nil {
		if s.ctx.Err() != nil {
			return false, s.ctx.Err()
		}
		return false, fmt.Errorf("%w: push: %w", wire.ErrShuttingDown, err)
	}
	s.mu.Lock()
	s.creditRecs -= int64(len(resp.Entries))
	s.creditBytes -= size
	s.mu.Unlock()
	s.sentRecs.Add(int64(len(resp.Entries)))
	s.sentBytes.Add(size)
	n.metrics.pushedRecords.Add(float64(len(resp.Entries)))
	s.next = next
	return true, nil
}

// SubscriptionStats is one live subscription as its node sees it.
type SubscriptionStats struct {
	// Stream and Partition name the stream partition.
	Stream    string
	Partition int
	// SentRecords and SentBytes count what was pushed (bytes as wire.StreamRecordSize).
	SentRecords, SentBytes int64
	// CreditRecords and CreditBytes are the credit left.
	CreditRecords, CreditBytes int64
}

// Subscriptions returns the node's live subscriptions, by stream and partition.
func (n *Node) Subscriptions() []SubscriptionStats {
	var out []SubscriptionStats
	n.mu.Lock()
	ccs := make([]*clientConn, 0, len(n.conns))
	for _, cc := range n.conns {
		ccs = append(ccs, cc)
	}
	n.mu.Unlock()
	for _, cc := range ccs {
		cc.subs.mu.Lock()
		for _, s := range cc.subs.byID {
			s.mu.Lock()
			out = append(out, SubscriptionStats{Stream: s.stream, Partition: s.part,
				SentRecords: s.sentRecs.Load(), SentBytes: s.sentBytes.Load(),
				CreditRecords: s.creditRecs, CreditBytes: s.creditBytes})
			s.mu.Unlock()
		}
		cc.subs.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b SubscriptionStats) int {
		return cmp.Or(strings.Compare(a.Stream, b.Stream), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}
