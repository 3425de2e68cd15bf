package sequencer

// Per-stage timings of the commit round, kept on every node. A batch's round on the
// leader is: queue (the oldest input's wait for a batch), raft.Apply → future resolved
// ("raft": leader persist, replication, follower persist, commit, leader FSM apply), reply.
// Inside "raft", this file times what the node can see of it by itself:
//   - leader persist: StoreLogs on the node while it leads (hashicorp/raft persists a
//     batch on the leader before it replicates it);
//   - replication: the leader's AppendEntries round trip to each follower, for requests
//     that carry entries (heartbeats and empty commit-index updates are not counted);
//   - follower persist: StoreLogs on the node while it follows.
// The FSM apply is timed by the node (replica.ApplyStats). Each Sequencer has its own
// timings (no process-global state): several nodes in one process do not mix.

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// StageBuckets are the upper bounds of StageHistogram's buckets: 16µs doubling to about
// 0.5s; a last, unbounded bucket holds the rest.
var StageBuckets = func() []time.Duration {
	b := make([]time.Duration, 16)
	for i := range b {
		b[i] = 16 * time.Microsecond << i
	}
	return b
}()

// StageHistogram is a snapshot of one stage's timings since Open.
type StageHistogram struct {
	// Counts[i] counts the observations d with StageBuckets[i-1] < d <= StageBuckets[i];
	// the last element (index len(StageBuckets)) those above the last bound.
	Counts [17]uint64
	// Count is the number of observations and Sum their total.
	Count uint64
	Sum   time.Duration
}

// Mean is Sum/Count, or 0 without observations.
func (h StageHistogram) Mean() time.Duration {
	if h.Count == 0 {
		return 0
	}
	return h.Sum / time.Duration(h.Count)
}

// StageTimings are a node's commit-round stage timings since Open; see the file comment
// of stages.go for what each covers.
type StageTimings struct {
	// Queue, Raft and Reply are the leader's stages of its own batches (Stats.QueueTime,
	// RaftTime and ReplyTime are their sums). Raft and Reply count successful batches only.
	Queue, Raft, Reply StageHistogram
	// LeaderPersist and FollowerPersist time the log store's StoreLogs, by the node's
	// Raft state when the call started.
	LeaderPersist, FollowerPersist StageHistogram
	// Replication times this node's AppendEntries round trips as leader, by follower ID.
	Replication map[string]StageHistogram
}

// durHist is a lock-free histogram of durations over StageBuckets.
type durHist struct {
	counts [len(StageHistogram{}.Counts)]atomic.Uint64
	sum    atomic.Int64
}

func (h *durHist) observe(d time.Duration) {
	i := 0
	for i < len(StageBuckets) && d > StageBuckets[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// snapshot reads h; Count is the total of the counts read (Sum may be a moment newer).
func (h *durHist) snapshot() StageHistogram {
	var s StageHistogram
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
		s.Count += s.Counts[i]
	}
	s.Sum = time.Duration(h.sum.Load())
	return s
}

// stageTimers are the timings the log store and transport wrappers record into; they
// exist before Raft does, so the Raft whose state labels StoreLogs is set after NewRaft.
type stageTimers struct {
	raft                           atomic.Pointer[raft.Raft]
	leaderPersist, followerPersist durHist

	mu          sync.Mutex
	replication map[raft.ServerID]*durHist
}

// persisted records one StoreLogs call that started at start.
func (t *stageTimers) persisted(start time.Time, leader bool) {
	if leader {
		t.leaderPersist.observe(time.Since(start))
	} else {
		t.followerPersist.observe(time.Since(start))
	}
}

// isLeader reports whether the node's Raft leads; false before Raft starts.
func (t *stageTimers) isLeader() bool {
	r := t.raft.Load()
	return r != nil && r.State() == raft.Leader
}

// replicated records one AppendEntries round trip to peer.
func (t *stageTimers) replicated(peer raft.ServerID, d time.Duration) {
	t.mu.Lock()
	h := t.replication[peer]
	if h == nil {
		if t.replication == nil {
			t.replication = make(map[raft.ServerID]*durHist)
		}
		h = new(durHist)
		t.replication[peer] = h
	}
	t.mu.Unlock()
	h.observe(d)
}

// StageTimings returns the node's commit-round stage timings since Open.
func (s *Sequencer) StageTimings() StageTimings {
	t := s.parts.timers
	st := StageTimings{
		Queue:           s.counters.queue.snapshot(),
		Raft:            s.counters.raftStage.snapshot(),
		Reply:           s.counters.reply.snapshot(),
		LeaderPersist:   t.leaderPersist.snapshot(),
		FollowerPersist: t.followerPersist.snapshot(),
		Replication:     map[string]StageHistogram{},
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, h := range t.replication {
		st.Replication[string(id)] = h.snapshot()
	}
	return st
}

// timedTransport times the AppendEntries round trips that carry entries, plain and
// pipelined, into timers. It keeps the optional interfaces of the transport it wraps
// visible through timed.
type timedTransport struct {
	raft.Transport
	timers *stageTimers
}

// AppendEntries implements raft.Transport.
func (t *timedTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if len(args.Entries) == 0 {
		return t.Transport.AppendEntries(id, target, args, resp)
	}
	start := time.Now()
	err := t.Transport.AppendEntries(id, target, args, resp)
	if err == nil {
		t.timers.replicated(id, time.Since(start))
	}
	return err
}

// AppendEntriesPipeline implements raft.Transport: the pipeline's responses pass through
// a goroutine that times them as they arrive (AppendFuture.Start is when the request
// was sent), then hands them to Raft in order.
func (t *timedTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.Transport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	tp := &timedPipeline{AppendPipeline: p, id: id, timers: t.timers, out: make(chan raft.AppendFuture), stop: make(chan struct{})}
	tp.wg.Add(1)
	go tp.forward()
	return tp, nil
}

// timedPipeline is a pipeline whose responses are timed on their way to Raft.
type timedPipeline struct {
	raft.AppendPipeline
	id     raft.ServerID
	timers *stageTimers
	out    chan raft.AppendFuture
	stop   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

func (p *timedPipeline) forward() {
	defer p.wg.Done()
	in := p.AppendPipeline.Consumer()
	for {
		select {
		case <-p.stop:
			return
		case f, ok := <-in:
			if !ok {
				close(p.out)
				return
			}
			if len(f.Request().Entries) > 0 && f.Error() == nil {
				p.timers.replicated(p.id, time.Since(f.Start()))
			}
			select {
			case p.out <- f:
			case <-p.stop:
				return
			}
		}
	}
}

// Consumer implements raft.AppendPipeline.
func (p *timedPipeline) Consumer() <-chan raft.AppendFuture { return p.out }

// Close implements raft.AppendPipeline: it closes the wrapped pipeline and ends the
// forwarding goroutine.
func (p *timedPipeline) Close() error {
	err := p.AppendPipeline.Close()
	p.once.Do(func() { close(p.stop) })
	p.wg.Wait()
	return err
}

// timed wraps t so that its AppendEntries round trips are timed, keeping pre-vote
// visible when t has it.
func timed(timers *stageTimers, t raft.Transport) raft.Transport {
	tt := &timedTransport{Transport: t, timers: timers}
	if pv, ok := t.(raft.WithPreVote); ok {
		return struct {
			*timedTransport
			raft.WithPreVote
		}{tt, pv}
	}
	return tt
}
