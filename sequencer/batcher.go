package sequencer

import (
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstepdb/lockstep/internal/batch"
)

// Proposal is one input to put in the log, with the callback that receives its outcome.
type Proposal struct {
	// Item is the input. The caller fills Kind, Session, Seq, AckThrough, Procedure,
	// Key, Partition, Scope and Args; the sequencer only orders and batches it. Its byte
	// slices must not change until Done is called.
	Item batch.Item
	// Done receives the outcome, exactly once, on a sequencer goroutine, unless Submit
	// returned an error (then never). On success err is nil, res is the FSM's result for
	// the item and index the log index of its entry. Done must not block and must not
	// call Close; it may call Submit.
	Done func(res batch.Result, index uint64, err error)
}

// pendingBatch is a batch given to raft.Apply, waiting for its outcome.
type pendingBatch struct {
	future raft.ApplyFuture
	props  []*Proposal
	// items is the entry's item count: the proposals plus a hash check, if any.
	items int
	// proposed is when raft.Apply was called (for the stage timings).
	proposed time.Time
}

// Submit queues p for the next batch. It never blocks. It returns ErrNotLeader on a
// follower (nothing is forwarded: answer the client with Leader's address),
// ErrOverloaded when Config.MaxQueuedInputs inputs are waiting, ErrShutdown after Close,
// and ErrBadProposal or ErrTooLarge for a proposal that cannot be encoded. When Submit
// returns an error, p.Done is never called.
func (s *Sequencer) Submit(p *Proposal) error {
	if err := s.check(p); err != nil {
		return err
	}
	if s.isClosed.Load() {
		return ErrShutdown
	}
	if s.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrShutdown
	}
	queued := len(s.queue) - s.head
	if queued == 0 {
		s.queuedSince = time.Now() // one clock read per wake-up, not per input
	}
	if queued >= s.cfg.MaxQueuedInputs {
		s.mu.Unlock()
		s.counters.overloaded.Add(1)
		return ErrOverloaded
	}
	if s.head > 0 && len(s.queue) == cap(s.queue) {
		// Slide the queued proposals to the front rather than grow the slice.
		n := copy(s.queue, s.queue[s.head:])
		clear(s.queue[n:])
		s.queue, s.head = s.queue[:n], 0
	}
	s.queue = append(s.queue, p)
	s.mu.Unlock()
	if queued == 0 {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// check refuses a proposal that would make an entry no replica can decode: one bad item
// must never poison the batch it shares with others (DESIGN.md invariant 7).
func (s *Sequencer) check(p *Proposal) error {
	if p == nil || p.Done == nil {
		return fmt.Errorf("%w: nil proposal or Done", ErrBadProposal)
	}
	it := &p.Item
	if it.Kind == 0 {
		return fmt.Errorf("%w: item kind not set", ErrBadProposal)
	}
	if len(it.Scope) > batch.MaxScope {
		return fmt.Errorf("%w: scope of %d partitions exceeds %d", ErrBadProposal, len(it.Scope), batch.MaxScope)
	}
	for _, part := range it.Scope {
		if part < 0 || part > batch.MaxScope {
			return fmt.Errorf("%w: scope partition %d out of range", ErrBadProposal, part)
		}
	}
	if n := batch.ItemSize(it); n > s.itemBudget {
		return fmt.Errorf("%w: item of up to %d bytes, limit %d", ErrTooLarge, n, s.itemBudget)
	}
	return nil
}

// failQueued empties the queue and fails every proposal in it with err.
func (s *Sequencer) failQueued(err error) {
	s.mu.Lock()
	props := append([]*Proposal(nil), s.queue[s.head:]...)
	clear(s.queue)
	s.queue, s.head = s.queue[:0], 0
	s.mu.Unlock()
	s.fail(props, err)
}

// fail calls every proposal's Done with err.
func (s *Sequencer) fail(props []*Proposal, err error) {
	if len(props) == 0 {
		return
	}
	s.counters.failed.Add(uint64(len(props)))
	for _, p := range props {
		p.Done(batch.Result{}, 0, err)
	}
}

// take moves queued proposals into props, as many as fit next to the size already
// taken, and returns the new props and size. It reports whether the batch is full.
func (s *Sequencer) take(props []*Proposal, size int) ([]*Proposal, int, bool) {
	budget := s.itemBudget
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(props) == 0 {
		s.batchSince = s.queuedSince
	}
	i := s.head
	for ; i < len(s.queue) && len(props) < s.cfg.MaxBatchInputs; i++ {
		n := batch.ItemSize(&s.queue[i].Item)
		if size+n > budget {
			break
		}
		props = append(props, s.queue[i])
		size += n
	}
	full := i < len(s.queue) || len(props) == s.cfg.MaxBatchInputs
	clear(s.queue[s.head:i])
	s.head = i
	if s.head == len(s.queue) {
		s.queue, s.head = s.queue[:0], 0
	} else {
		s.queuedSince = time.Now() // the rest waits for the next batch from now on
	}
	return props, size, full
}

// queued reports whether proposals are waiting.
func (s *Sequencer) queued() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue) > s.head
}

// batcherState is what the batcher goroutine keeps between batches.
type batcherState struct {
	entry      batch.Entry // Items reused between batches
	clock      batchClock  // batch times never go backwards, nor stand still (batchtime.go)
	slowLogged bool        // a batch time ahead of the clock was logged, its end not yet
	lastCheck  int64       // batch time of the last hash-check item
	linger     *time.Timer
}

// runBatcher is the batcher goroutine: it waits for queued proposals and for a free
// in-flight slot, takes a batch, and gives it to Raft. While all slots are taken the
// queue grows, so under load each entry carries more inputs (group commit). On stop it
// fails what is still queued with ErrShutdown and closes inflight, which ends the
// completer once the batches already applied are done.
func (s *Sequencer) runBatcher() {
	defer s.wg.Done()
	defer close(s.inflight)
	defer s.failQueued(ErrShutdown)

	var st batcherState
	if s.cfg.MaxBatchDelay > 0 {
		st.linger = time.NewTimer(time.Hour)
		st.linger.Stop()
	}
	for {
		for !s.queued() {
			select {
			case <-s.wake:
			case <-s.stop:
				return
			}
		}
		// This is where batches grow: wait until fewer than MaxInflightBatches applies
		// are outstanding.
		select {
		case s.slots <- struct{}{}:
		case <-s.stop:
			return
		}
		props, size, full := s.take(nil, 0)
		if len(props) == 0 { // the queue was failed meanwhile
			<-s.slots
			continue
		}
		if !full && st.linger != nil {
			var stopped bool
			props, stopped = s.lingerFor(&st, props, size)
			if stopped {
				<-s.slots
				s.fail(props, ErrShutdown)
				return
			}
		}
		s.propose(&st, props)
	}
}

// lingerFor waits up to MaxBatchDelay for more proposals until the batch is full. It
// reports whether the Sequencer was stopped meanwhile.
func (s *Sequencer) lingerFor(st *batcherState, props []*Proposal, size int) ([]*Proposal, bool) {
	st.linger.Reset(s.cfg.MaxBatchDelay)
	defer st.linger.Stop()
	for full := false; !full; {
		select {
		case <-s.wake:
			props, size, full = s.take(props, size)
		case <-st.linger.C:
			return props, false
		case <-s.stop:
			return props, true
		}
	}
	return props, false
}

// propose stamps, encodes and applies one batch and hands it to the completer. The
// caller holds an in-flight slot, so the send on inflight cannot block.
func (s *Sequencer) propose(st *batcherState, props []*Proposal) {
	if s.raft.State() != raft.Leader {
		// Not given to Raft, so it never entered the log.
		<-s.slots
		s.fail(props, ErrNotLeader)
		return
	}
	now := s.stampTime(st)

	e := &st.entry
	e.Time = now
	e.Items = e.Items[:0]
	for _, p := range props {
		e.Items = append(e.Items, p.Item)
	}
	hashCheck := false
	if iv := s.cfg.HashCheckInterval; iv > 0 && (st.lastCheck == 0 || now-st.lastCheck >= int64(iv)) {
		e.Items = append(e.Items, batch.Item{Kind: batch.KindHashCheck})
		st.lastCheck = now
		hashCheck = true
	}
	// Raft keeps the slice it is given (log cache, inflight list, the leader's FSM), so
	// every entry is encoded into its own buffer, of its size's upper bound.
	data := batch.AppendEntry(make([]byte, 0, batch.EntrySize(e)), e)
	if len(data) > s.cfg.MaxBatchBytes {
		panic(fmt.Sprintf("sequencer: invariant violated: entry of %d bytes exceeds MaxBatchBytes %d", len(data), s.cfg.MaxBatchBytes))
	}
	items := len(e.Items)
	clear(e.Items) // drop references to the callers' byte slices

	proposed := time.Now()
	s.counters.queue.observe(proposed.Sub(s.batchSince))
	f := s.raft.Apply(data, s.cfg.ApplyTimeout)
	s.counters.recordBatch(len(props), hashCheck)
	s.inflight <- pendingBatch{future: f, props: props, items: items, proposed: proposed}
}

// runCompleter is the completer goroutine: it waits for the applied batches in log order
// and calls each proposal's Done with its result or the translated error. It ends when
// the batcher closes inflight; Close waits for it before stopping Raft, because every
// future is answered while Raft runs (see Close).
func (s *Sequencer) runCompleter() {
	defer s.wg.Done()
	for b := range s.inflight {
		err := b.future.Error()
		resolved := time.Now()
		<-s.slots // let the batcher apply the next batch while Done calls run
		if err != nil {
			s.fail(b.props, applyError(err, b.future.Index() != 0))
			continue
		}
		res, err := s.results(b)
		if err != nil {
			s.log.Error("bad FSM response", "index", b.future.Index(), "error", err)
			s.fail(b.props, err)
			continue
		}
		for i, p := range b.props {
			p.Done(res.Items[i], res.Index, nil)
		}
		s.counters.recordRound(resolved.Sub(b.proposed), time.Since(resolved))
	}
}

// results checks the FSM's response to b against the FSM contract: a *batch.Results for
// the entry's index with one result per item.
func (s *Sequencer) results(b pendingBatch) (*batch.Results, error) {
	switch r := b.future.Response().(type) {
	case *batch.Results:
		if r == nil || len(r.Items) != b.items || r.Index != b.future.Index() {
			return nil, fmt.Errorf("%w: results for index %d with %d items, want index %d with %d",
				ErrBadResponse, resultsIndex(r), resultsLen(r), b.future.Index(), b.items)
		}
		return r, nil
	case error:
		return nil, fmt.Errorf("%w: %w", ErrBadResponse, r)
	default:
		return nil, fmt.Errorf("%w: %T", ErrBadResponse, r)
	}
}

func resultsIndex(r *batch.Results) uint64 {
	if r == nil {
		return 0
	}
	return r.Index
}

func resultsLen(r *batch.Results) int {
	if r == nil {
		return 0
	}
	return len(r.Items)
}
