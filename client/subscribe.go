package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// Subscriptions. A Subscription holds one feed per stream partition it follows; all of
// them are attached to one node at a time (any ready replica, round robin over the
// candidates), as wire subscriptions on the client's connection to that node:
//
//  1. attach sends OpSubscribe for every feed, from the feed's next undelivered offset,
//     with MinIndex set to the highest log index the feed has heard of (Response.Index):
//     the replica waits until it has applied that far, so it holds every record the
//     subscription has received, and nothing is skipped or repeated.
//  2. The node pushes records within the credit the feed granted. The connection's reader
//     hands them to deliver, which checks their order, appends them to the feed's buffer
//     and wakes Next. The buffer never holds more than the credit window: the node cannot
//     send more (deliver checks it, and treats an excess as a protocol error).
//  3. Next returns the buffered records; when the caller comes back for more, the records
//     it had are counted as consumed and, once half a window is owed, granted back to
//     the node (OpCredit).
//  4. A connection loss, or an end push saying the node cannot serve (NotReady,
//     Divergent, ShuttingDown...), wakes the supervisor goroutine (run), which detaches
//     every feed and attaches them to another node, with backoff, until Close. An end
//     that retrying cannot help (UnknownStream, OffsetTrimmed, OffsetPastEnd, BadScope)
//     ends the subscription: Next returns it once the buffered records are taken.

// Default credit window of each partition of a subscription (see WithCredit).
const (
	DefaultSubscribeCreditRecords = 1024
	DefaultSubscribeCreditBytes   = 4 << 20
)

// keepaliveInterval is how often a subscription pings the node it is attached to, so that
// a node that stops answering (paused, cut off) without closing the connection is left
// like a lost one: a ping unanswered within RequestTimeout moves the subscription.
const keepaliveInterval = 2 * time.Second

// subscribeWait is how long, beyond RequestTimeout, a subscribe request may wait for its
// answer: a replica may wait for itself to catch up before answering (5 s at most).
const subscribeWait = 6 * time.Second

// SubscribeOption configures a subscription.
type SubscribeOption func(*subscribeConfig)

type subscribeConfig struct {
	records int   // credit window per partition, in records
	bytes   int64 // credit window per partition, in bytes
}

// WithCredit sets the flow-control window of each partition of a subscription: the node
// sends at most records records and about bytes bytes (keys, values and a few bytes of
// framing per record; a record larger than the window still goes, alone) that Next has
// not yet handed out and the caller has not come back for. This bounds the client's
// memory for the subscription, and how far a subscriber that stops calling Next lets the
// node run ahead: not at all beyond the window. Defaults DefaultSubscribeCreditRecords
// and DefaultSubscribeCreditBytes; values below 1 take the default.
func WithCredit(records, bytes int) SubscribeOption {
	return func(c *subscribeConfig) {
		if records > 0 {
			c.records = min(records, math.MaxInt32)
		}
		if bytes > 0 {
			c.bytes = int64(bytes)
		}
	}
}

// OffsetPastEndError is the error of a subscription that starts beyond the partition's
// next offset (the offset its next record will get). It matches ErrOffsetPastEnd.
type OffsetPastEndError struct {
	// Stream and Partition name the stream partition.
	Stream    string
	Partition int
	// Offset is the offset asked for; Next the partition's next offset on the replica that
	// answered.
	Offset, Next uint64
	// Err is the node's error, matching ErrOffsetPastEnd.
	Err error
}

func (e *OffsetPastEndError) Error() string {
	return fmt.Sprintf("client: subscribe %q partition %d: offset %d is past the end (next offset %d)",
		e.Stream, e.Partition, e.Offset, e.Next)
}

// Unwrap returns the node's error, so errors.Is(err, ErrOffsetPastEnd) holds.
func (e *OffsetPastEndError) Unwrap() error { return e.Err }

// Subscription delivers the records of one stream partition, or of all of a stream's
// partitions, as the replica it is attached to applies them (Client.Subscribe,
// Client.SubscribeAll). Next and Close may be called from different goroutines; Next is
// meant for one consumer goroutine at a time.
type Subscription struct {
	c      *Client
	stream string
	cfg    subscribeConfig
	feeds  []*feed // by partition, ascending

	mu      sync.Mutex
	err     error         // why it ended; Next returns it once the buffers are empty
	fault   *subFault     // what troubled the current attachment first; for run
	arrived chan struct{} // cap 1: records arrived or the subscription ended
	trouble chan struct{} // cap 1: wakes run

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	done   chan struct{} // closed when run has returned
}

// feed is one partition of a subscription. Its fields are guarded by Subscription.mu.
type feed struct {
	part     int
	next     uint64 // the offset of the next record to receive
	fence    uint64 // the highest log index a push or answer named (wire Response.Index)
	earliest bool   // start at the first retained offset if next is below it
	att      *attachment

	buf                 []Record // received, not handed out yet
	bufBytes            int64
	lentRecs, lentBytes int64 // handed out by the last Next
	owedRecs, owedBytes int64 // consumed, not granted back yet
}

// attachment is one wire subscription: a feed attached on a connection under an id.
type attachment struct {
	sub  *Subscription
	feed *feed
	cn   *conn
	id   uint64
}

// subFault is a trouble of an attachment: an end push, a lost connection, a bad push.
type subFault struct {
	feed *feed
	err  error
	next uint64 // the end push's NextOffset
}

// errBadPush marks a push that breaks the protocol (out of order, over the credit): the
// subscription moves to another node.
var errBadPush = fmt.Errorf("%w: bad subscription push", wire.ErrMalformed)

// Subscribe delivers the records of one stream partition from offset from on, in offset
// order, pushed by a node as they are applied, with credit-based flow control
// (WithCredit). Any ready replica serves it; on a node loss, or a node that stops serving
// (not ready, diverged, shutting down), the subscription moves to another replica and
// goes on from the next undelivered offset, without gap or duplicate.
//
// It fails fast with ErrUnknownStream, an *OffsetTrimmedError (from is below the first
// offset retention kept), an *OffsetPastEndError (from is beyond the partition's next
// offset, after the replica has had a second to catch up) and ErrBadScope (no such
// partition). Transient failures are retried like other requests (Config.MaxRetries).
func (c *Client) Subscribe(ctx context.Context, stream string, partition int, from uint64, opts ...SubscribeOption) (*Subscription, error) {
	return c.SubscribePartitions(ctx, stream, []int{partition}, map[int]uint64{partition: from}, opts...)
}

// SubscribeAll subscribes to every partition of the stream, as Subscribe does to one;
// Next returns the records of all of them, in offset order per partition. from gives the
// start offset per partition; a partition missing from the map starts at its first
// retained offset (offset 0 if retention trimmed nothing). A key of from that is not a
// partition of the stream fails with ErrBadScope. An end of one partition (e.g. an
// *OffsetTrimmedError) ends the whole subscription.
func (c *Client) SubscribeAll(ctx context.Context, stream string, from map[int]uint64, opts ...SubscribeOption) (*Subscription, error) {
	desc, err := c.Streams().Describe(ctx, stream)
	if err != nil {
		return nil, err
	}
	parts := len(desc.Partitions)
	for p := range from {
		if p < 0 || p >= parts {
			return nil, fmt.Errorf("client: subscribe %q: %w: partition %d of %d", stream, ErrBadScope, p, parts)
		}
	}
	all := make([]int, parts)
	for p := range all {
		all[p] = p
	}
	return c.SubscribePartitions(ctx, stream, all, from, opts...)
}

// SubscribePartitions subscribes to the listed partitions of the stream (a consumer
// group member's assignment, say), as SubscribeAll does to all of them, on one node at a
// time: from gives the start offset per partition; a partition missing from the map
// starts at its first retained offset. An empty or repeated partition list, or a key of
// from that is not listed, fails with ErrBadArguments; a partition the stream does not
// have with ErrBadScope. An end of one partition ends the whole subscription.
func (c *Client) SubscribePartitions(ctx context.Context, stream string, partitions []int, from map[int]uint64, opts ...SubscribeOption) (*Subscription, error) {
	parts := slices.Sorted(slices.Values(partitions))
	if len(parts) == 0 || len(slices.Compact(slices.Clone(parts))) != len(parts) {
		return nil, fmt.Errorf("client: subscribe %q: %w: partitions %v: want at least one, each once", stream, ErrBadArguments, partitions)
	}
	for p := range from {
		if !slices.Contains(parts, p) {
			return nil, fmt.Errorf("client: subscribe %q: %w: start offset for partition %d, which is not among %v", stream, ErrBadArguments, p, parts)
		}
	}
	for _, p := range parts {
		if p < 0 || p > math.MaxInt32 {
			return nil, fmt.Errorf("client: subscribe %q: %w: partition %d", stream, ErrBadScope, p)
		}
	}
	s := c.newSubscription(stream, opts)
	for _, p := range parts {
		off, ok := from[p]
		s.feeds = append(s.feeds, &feed{part: p, next: off, earliest: !ok})
	}
	if err := s.open(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (c *Client) newSubscription(stream string, opts []SubscribeOption) *Subscription {
	cfg := subscribeConfig{records: DefaultSubscribeCreditRecords, bytes: DefaultSubscribeCreditBytes}
	for _, o := range opts {
		o(&cfg)
	}
	s := &Subscription{c: c, stream: stream, cfg: cfg,
		arrived: make(chan struct{}, 1), trouble: make(chan struct{}, 1), done: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// open attaches the subscription, retrying transient failures within ctx and
// Config.MaxRetries, and starts run.
func (s *Subscription) open(ctx context.Context) error {
	c := s.c
	for attempt := 0; ; attempt++ {
		err := s.attach(ctx, c.anyAddr())
		if err == nil {
			break
		}
		if !transient(err) {
			s.cancel()
			return s.final(err)
		}
		switch {
		case ctx.Err() != nil:
			err = fmt.Errorf("client: subscribe %q: %w (last: %v)", s.stream, ctx.Err(), err)
		case !c.retriesLeft(attempt):
			err = fmt.Errorf("client: subscribe %q: %w after %d attempts (last: %w)", s.stream, ErrRetriesExhausted, attempt+1, err)
		default:
			err = c.backoff(ctx, attempt)
		}
		if err != nil {
			s.detach()
			s.cancel()
			return c.opErr(err)
		}
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		s.detach()
		s.cancel()
		return ErrClosed
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go s.run()
	return nil
}

// attach subscribes every feed on the node at addr. On failure it detaches them all.
func (s *Subscription) attach(ctx context.Context, addr string) error {
	c := s.c
	cn, err := c.liveConn(addr)
	if cn == nil && err == nil {
		cn, err = c.dial(ctx, addr, c.cfg.RequestTimeout)
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.fault = nil // of an earlier attachment: all of them are detached
	s.mu.Unlock()
	for _, f := range s.feeds {
		a := &attachment{sub: s, feed: f, cn: cn}
		s.mu.Lock()
		if err := cn.addSub(a); err != nil {
			s.mu.Unlock()
			s.detach()
			return err
		}
		f.att = a
		f.owedRecs, f.owedBytes = 0, 0 // the new grant includes them
		req := wire.Request{Op: wire.OpSubscribe, Sub: a.id, Stream: s.stream, Partition: int32(f.part),
			Offset: f.next, MinIndex: f.fence, Earliest: f.earliest,
			Max:   uint32(max(int64(s.cfg.records)-int64(len(f.buf))-f.lentRecs, 0)),
			Bytes: uint64(max(s.cfg.bytes-f.bufBytes-f.lentBytes, 0))}
		s.mu.Unlock()
		resp, _, err := cn.roundTrip(ctx, &req, c.cfg.RequestTimeout+subscribeWait, c.closing, nil)
		if err == nil {
			err = resp.Err()
		}
		if err != nil {
			s.detach()
			return &subFault{feed: f, err: err, next: resp.NextOffset}
		}
		s.mu.Lock()
		if f.att == a {
			// Pushes may have come in already: the reader delivers them before this
			// goroutine wakes. With earliest, the node may have moved the start up.
			f.next = max(f.next, resp.NextOffset)
			f.fence = max(f.fence, resp.Index)
			f.earliest = false
		}
		s.mu.Unlock()
	}
	c.log.Debug("subscription attached", "stream", s.stream, "addr", addr, "node", cn.node, "partitions", len(s.feeds))
	return nil
}

func (f *subFault) Error() string { return f.err.Error() }
func (f *subFault) Unwrap() error { return f.err }

// detach takes every feed off its connection, telling the node (one way) to stop.
func (s *Subscription) detach() {
	var gone []*attachment
	s.mu.Lock()
	for _, f := range s.feeds {
		if f.att != nil {
			gone = append(gone, f.att)
			f.att = nil
		}
	}
	s.mu.Unlock()
	for _, a := range gone {
		if a.cn.dropSub(a.id) {
			_ = a.cn.sendOneWay(noWait, &wire.Request{Op: wire.OpUnsubscribe, Sub: a.id})
		}
	}
}

// noWait is a context that is already done: a send with it never blocks.
var noWait = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// lost is called by a connection that failed with err, for each attachment it had.
func (s *Subscription) lost(a *attachment, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.feed.att == a {
		a.feed.att = nil
		s.troubleLocked(&subFault{feed: a.feed, err: err})
	}
}

// troubleLocked records the first fault of the current attachment and wakes run.
func (s *Subscription) troubleLocked(f *subFault) {
	if s.fault == nil {
		s.fault = f
	}
	signal(s.trouble)
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run is the supervisor goroutine: it moves the subscription to another node when its
// node fails it, and ends it on a definite error, Close or the client's Close.
func (s *Subscription) run() {
	c := s.c
	defer c.wg.Done()
	defer close(s.done)
	defer s.detach()
	keepalive := time.NewTicker(keepaliveInterval)
	defer keepalive.Stop()
	for {
		select {
		case <-s.ctx.Done():
			s.end(ErrClosed)
			return
		case <-c.closing:
			s.end(ErrClosed)
			return
		case <-keepalive.C:
			s.ping()
			continue
		case <-s.trouble:
		}
		s.mu.Lock()
		fault := s.fault
		s.fault = nil
		s.mu.Unlock()
		if fault == nil {
			continue
		}
		if !transient(fault) {
			s.end(s.final(fault))
			return
		}
		c.log.Debug("subscription moving", "stream", s.stream, "err", fault.err)
		if err := s.move(); err != nil {
			s.end(s.final(err))
			return
		}
	}
}

// move detaches every feed and attaches them to another node, with backoff, until one
// takes them. It returns an attach error that moving cannot help, or nil once attached or
// when Close or the client's Close interrupts it (run's loop then ends the subscription).
func (s *Subscription) move() error {
	c := s.c
	s.detach()
	for pauses := 0; ; pauses++ {
		err := s.attach(s.ctx, c.anyAddr())
		if err == nil || s.ctx.Err() != nil || c.isClosing() {
			return nil
		}
		if !transient(err) {
			return err
		}
		c.log.Debug("subscription attach failed", "stream", s.stream, "err", err)
		if c.backoff(s.ctx, pauses) != nil {
			return nil
		}
	}
}

// ping asks the node the subscription is attached to for a Ping; no answer within
// RequestTimeout is a fault of the attachment.
func (s *Subscription) ping() {
	s.mu.Lock()
	var a *attachment
	for _, f := range s.feeds {
		if f.att != nil {
			a = f.att
			break
		}
	}
	s.mu.Unlock()
	if a == nil {
		return
	}
	_, _, err := a.cn.roundTrip(s.ctx, &wire.Request{Op: wire.OpPing}, s.c.cfg.RequestTimeout, s.c.closing, nil)
	if err == nil || s.ctx.Err() != nil || errors.Is(err, ErrClosed) {
		return
	}
	s.mu.Lock()
	if a.feed.att == a {
		s.troubleLocked(&subFault{feed: a.feed, err: fmt.Errorf("%w: %s: no answer to a ping: %w", ErrConnLost, a.cn.addr, err)})
	}
	s.mu.Unlock()
}

// end ends the subscription with err, unless it has ended already, and wakes Next.
func (s *Subscription) end(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	signal(s.arrived)
}

// transient reports whether err, of an attachment, is worth moving to another node for.
func transient(err error) bool {
	if errors.Is(err, ErrClosed) || refused(err) {
		return false
	}
	var we *wire.Error
	if errors.As(err, &we) {
		switch we.Code {
		case wire.CodeUnknownStream, wire.CodeOffsetTrimmed, wire.CodeOffsetPastEnd, wire.CodeBadScope,
			wire.CodeBadArguments, wire.CodeTooLarge, wire.CodeUnknownProcedure:
			return false
		}
	}
	return true // the connection, the node's state, or a bad push: another node may do
}

// final returns the error that ends the subscription for err: an *OffsetTrimmedError or
// *OffsetPastEndError for those codes, else err as the client's callers see it.
func (s *Subscription) final(err error) error {
	var f *subFault
	if errors.As(err, &f) {
		s.mu.Lock()
		offset := f.feed.next
		s.mu.Unlock()
		switch {
		case errors.Is(f.err, wire.ErrOffsetTrimmed):
			return &OffsetTrimmedError{Stream: s.stream, Partition: f.feed.part, Offset: offset, First: f.next, Err: publicErr(f.err)}
		case errors.Is(f.err, wire.ErrOffsetPastEnd):
			return &OffsetPastEndError{Stream: s.stream, Partition: f.feed.part, Offset: offset, Next: f.next, Err: publicErr(f.err)}
		}
		err = fmt.Errorf("client: subscribe %q partition %d: %w", s.stream, f.feed.part, f.err)
	}
	return s.c.opErr(err)
}

// Close ends the subscription and frees its resources: the node stops pushing, buffered
// records are dropped, and Next returns ErrClosed. Idempotent.
func (s *Subscription) Close() error {
	s.cancel()
	<-s.done
	s.mu.Lock()
	s.err = ErrClosed
	for _, f := range s.feeds {
		f.buf, f.bufBytes = nil, 0
	}
	s.mu.Unlock()
	signal(s.arrived)
	return nil
}
