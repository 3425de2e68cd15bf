package sequencer

import (
	"fmt"
	"math/bits"
	"strings"
	"sync/atomic"
	"time"
)

// BatchSizeBuckets is the number of buckets of Stats.BatchSizes: bucket i counts the
// batches of [2^i, 2^(i+1)) inputs, up to batch.MaxItems.
const BatchSizeBuckets = 17

// Stats is a snapshot of a Sequencer's state and counters, for monitoring and tests.
type Stats struct {
	// State is Raft's state: "Follower", "Candidate", "Leader" or "Shutdown".
	State string
	// Term is the current Raft term.
	Term uint64
	// LastLogIndex is the last index in the log or the last snapshot.
	LastLogIndex uint64
	// CommitIndex is the highest index known to be committed.
	CommitIndex uint64
	// AppliedIndex is the highest index handed to the FSM.
	AppliedIndex uint64
	// LastContact is when a follower last heard from the leader; zero if never.
	LastContact time.Time
	// Batches counts the log entries this node proposed as leader, since Open.
	Batches uint64
	// Inputs counts the proposals in those entries (not the hash-check items).
	Inputs uint64
	// HashChecks counts the hash-check items the leader added.
	HashChecks uint64
	// Failed counts the proposals whose Done got an error.
	Failed uint64
	// Overloaded counts the Submits refused with ErrOverloaded.
	Overloaded uint64
	// BatchSizes is the histogram of proposals per batch: bucket i counts the batches
	// of [2^i, 2^(i+1)) proposals.
	BatchSizes [BatchSizeBuckets]uint64
	// BytesSinceSnapshot is the bytes of entries applied since the last snapshot;
	// ByteSnapshots counts the snapshots taken because they passed SnapshotBytes.
	BytesSinceSnapshot uint64
	ByteSnapshots      uint64
	// LastSnapshotBytes is the size of the last snapshot this node took or restored since
	// Open (0: none): no snapshot is taken by either trigger before BytesSinceSnapshot
	// reaches it (compaction.go).
	LastSnapshotBytes uint64
	// BatchTimeAhead is how far the latest batch time this node applied or stamped runs
	// ahead of its batch clock (Config.Now) now; 0 when it does not. On a leader it is
	// the lead it is slowing batch time to close (batchtime.go); on a follower, how far
	// the leader's clock runs ahead of this node's.
	BatchTimeAhead time.Duration
	// SlowedBatches counts the entries this node stamped, as leader, with its clock behind
	// batch time: their batch time advanced at half the clock's speed.
	SlowedBatches uint64
	// QueueDepth is the number of proposals waiting for a batch.
	QueueDepth int
	// InflightBatches is the number of raft.Apply calls outstanding.
	InflightBatches int

	// Where the commit rounds of this leader's batches spent their time, summed over
	// RoundBatches batches (divide for the mean per batch). QueueTime: from the oldest
	// input's arrival in the queue (approximately: when the queue was last found empty,
	// or last left non-empty by a batch) to raft.Apply. RaftTime: raft.Apply until the
	// future resolved: leader persist, replication and follower persist, commit, and the
	// leader's FSM apply (which the node also times alone). ReplyTime: running every
	// input's Done, i.e. handing the results to the client connections.
	QueueTime, RaftTime, ReplyTime time.Duration
	// RoundBatches counts the batches whose RaftTime and ReplyTime are summed (those
	// that succeeded); QueueTime covers every batch given to Raft (Batches).
	RoundBatches uint64
}

// MeanBatch returns the mean number of proposals per batch, or 0 before the first.
func (st Stats) MeanBatch() float64 {
	if st.Batches == 0 {
		return 0
	}
	return float64(st.Inputs) / float64(st.Batches)
}

// HistogramString renders BatchSizes as "1:n 2-3:n 4-7:n …", skipping empty buckets.
func (st Stats) HistogramString() string {
	var b strings.Builder
	for i, n := range st.BatchSizes {
		if n == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		lo, hi := 1<<i, 1<<(i+1)-1
		if lo == hi {
			fmt.Fprintf(&b, "%d:%d", lo, n)
		} else {
			fmt.Fprintf(&b, "%d-%d:%d", lo, hi, n)
		}
	}
	return b.String()
}

// counters are the Sequencer's cumulative counters, updated without locks.
type counters struct {
	batches, inputs, hashChecks, failed, overloaded atomic.Uint64
	byteSnapshots                                   atomic.Uint64
	slowed                                          atomic.Uint64 // Stats.SlowedBatches
	lastStamp                                       atomic.Int64  // the last batch time stamped
	sizes                                           [BatchSizeBuckets]atomic.Uint64
	// the leader's stage timings; see Stats and StageTimings.
	queue, raftStage, reply durHist
}

// recordRound adds one successful batch's raft and reply times.
func (c *counters) recordRound(raftTime, replyTime time.Duration) {
	c.raftStage.observe(raftTime)
	c.reply.observe(replyTime)
}

// recordBatch counts one batch of n proposals.
func (c *counters) recordBatch(n int, hashCheck bool) {
	c.batches.Add(1)
	c.inputs.Add(uint64(n))
	if hashCheck {
		c.hashChecks.Add(1)
	}
	c.sizes[min(bits.Len(uint(n))-1, BatchSizeBuckets-1)].Add(1)
}

// Stats returns the node's current state and counters.
func (s *Sequencer) Stats() Stats {
	st := Stats{
		State:           s.raft.State().String(),
		Term:            s.raft.CurrentTerm(),
		LastLogIndex:    s.raft.LastIndex(),
		CommitIndex:     s.raft.CommitIndex(),
		AppliedIndex:    s.raft.AppliedIndex(),
		LastContact:     s.raft.LastContact(),
		Batches:         s.counters.batches.Load(),
		Inputs:          s.counters.inputs.Load(),
		HashChecks:      s.counters.hashChecks.Load(),
		Failed:          s.counters.failed.Load(),
		Overloaded:      s.counters.overloaded.Load(),
		InflightBatches: len(s.slots),
		ByteSnapshots:   s.counters.byteSnapshots.Load(),
		BatchTimeAhead:  s.batchTimeAhead(),
		SlowedBatches:   s.counters.slowed.Load(),
	}
	raftStage := s.counters.raftStage.snapshot()
	st.QueueTime, st.RaftTime, st.RoundBatches = time.Duration(s.counters.queue.sum.Load()), raftStage.Sum, raftStage.Count
	st.ReplyTime = time.Duration(s.counters.reply.sum.Load())
	if s.counting != nil {
		st.BytesSinceSnapshot = s.counting.bytes.Load()
		st.LastSnapshotBytes = s.counting.snapBytes.Load()
	}
	for i := range st.BatchSizes {
		st.BatchSizes[i] = s.counters.sizes[i].Load()
	}
	s.mu.Lock()
	st.QueueDepth = len(s.queue) - s.head
	s.mu.Unlock()
	return st
}
