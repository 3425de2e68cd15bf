package sequencer

// Batch time across leaders. The leader stamps every entry with its clock, and batch time
// never goes backwards (batch.NextTime, which every replica applies again). A leader whose
// clock ran fast leaves batch time ahead of the other clocks; the clock of the leader that
// replaces it is behind the last batch time, and stamped as it is, batch time would stand
// still until that clock caught up — for the whole skew, with no session or group expiry,
// no processing-time window firing and no age retention meanwhile.
//
// So a leader whose clock is behind does not stamp it: it goes on from the latest batch
// time by half of what its clock advanced since its previous stamp (batchClock.stamp).
// Batch time keeps moving, at half speed, and the lead over the leader's clock shrinks by
// half of each second that passes: a lead of S is gone after 2S of the leader's clock, and
// from then on batch time is the leader's clock again. A leader does not refuse to lead
// instead: when the fast clock was the odd one out, every other voter is behind, and the
// cluster would have no leader for the whole skew. Each such entry is counted
// (Stats.SlowedBatches), the lead is reported (Stats.BatchTimeAhead), and a lead of
// slowLogAhead or more is logged when it starts and when it is gone. docs/architecture.md
// ("Batch time") explains it for operators.
//
// The leader knows the latest batch time from the entries it applied (timedFSM reads each
// entry's time) and from a restored snapshot (an FSM that implements BatchTimeFSM). Its
// predecessor's last entries may not be applied yet when it stamps its first: the
// replicas' NextTime then holds the new entries at the later time, and the leader goes on
// from it once it has applied them.

import (
	"io"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstepdb/lockstep/internal/batch"
)

const (
	// batchTimeSlowdown is how much slower than the leader's clock batch time advances
	// while the clock is behind it.
	batchTimeSlowdown = 2
	// slowLogAhead is the smallest lead of batch time over the leader's clock that is
	// logged; smaller ones (the clocks of a healthy cluster differ by milliseconds at
	// most) are only counted.
	slowLogAhead = 100 * time.Millisecond
)

// BatchTimeFSM is an optional interface of the state machine given to Open: the batch
// time its state has reached. The sequencer asks for it after Restore, on Raft's FSM
// goroutine, so that a leader whose state came from a snapshot goes on from the
// snapshot's batch time. Without it, the sequencer learns batch time only from the
// entries applied after the snapshot.
type BatchTimeFSM interface {
	// LastBatchTime returns the batch time, in Unix nanoseconds, of the last entry
	// applied, as the FSM ran it (after batch.NextTime); 0 if none.
	LastBatchTime() int64
}

// batchClock is the leader's side of the batch-time rule, kept by the batcher goroutine.
type batchClock struct {
	time  int64 // the latest batch time known: the last one stamped, or applied since
	clock int64 // this node's clock when it stamped time; 0 if time came from the log
}

// stamp returns the batch time of the next entry, given now, this node's clock, and
// applied, the latest batch time of the entries applied here:
//
//  1. it is never below the latest batch time known (batch.NextTime);
//  2. when now is at or past it, it is now;
//  3. when now is behind it, it is the latest batch time known plus 1/batchTimeSlowdown
//     of what the clock advanced since this node's previous stamp — nothing if the
//     latest batch time came from another leader's entries, or the clock stepped back.
func (b *batchClock) stamp(now, applied int64) int64 {
	if applied > b.time {
		b.time, b.clock = applied, 0
	}
	t := batch.NextTime(b.time, now)
	if t > now && b.clock != 0 && now > b.clock {
		t += (now - b.clock) / batchTimeSlowdown
	}
	b.time, b.clock = t, now
	return t
}

// timedFSM wraps the state machine to learn the latest batch time applied: each command
// entry's, and after a restore the FSM's own (BatchTimeFSM). It runs on Raft's FSM
// goroutine, like the state machine it wraps; latest may be read from any goroutine.
type timedFSM struct {
	raft.BatchingFSM
	latest atomic.Int64 // Unix nanoseconds; written on the FSM goroutine only
}

func (f *timedFSM) see(l *raft.Log) {
	if l.Type != raft.LogCommand {
		return
	}
	if t, ok := batch.EntryTime(l.Data); ok && t > f.latest.Load() {
		f.latest.Store(t)
	}
}

// Apply implements raft.FSM.
func (f *timedFSM) Apply(l *raft.Log) any {
	f.see(l)
	return f.BatchingFSM.Apply(l)
}

// ApplyBatch implements raft.BatchingFSM.
func (f *timedFSM) ApplyBatch(logs []*raft.Log) []any {
	for _, l := range logs {
		f.see(l)
	}
	return f.BatchingFSM.ApplyBatch(logs)
}

// Restore implements raft.FSM: batch time is the snapshot's, if the FSM says.
func (f *timedFSM) Restore(rc io.ReadCloser) error {
	err := f.BatchingFSM.Restore(rc)
	if bt, ok := f.BatchingFSM.(BatchTimeFSM); ok && err == nil {
		f.latest.Store(bt.LastBatchTime())
	}
	return err
}

// stampTime stamps the batch time of the entry the batcher is about to propose, and
// counts, reports and logs a batch time ahead of this leader's clock.
func (s *Sequencer) stampTime(st *batcherState) int64 {
	now := s.cfg.Now().UnixNano()
	t := st.clock.stamp(now, s.timed.latest.Load())
	s.counters.lastStamp.Store(t)
	ahead := time.Duration(t - now)
	switch {
	case ahead > 0:
		s.counters.slowed.Add(1)
		if !st.slowLogged && ahead >= slowLogAhead {
			st.slowLogged = true
			s.log.Warn("batch time is ahead of this leader's clock (a previous leader's clock ran fast, or this one stepped back): batch time advances at half speed until the clock catches up",
				"ahead", ahead, "batch_time", time.Unix(0, t).UTC(), "clock", time.Unix(0, now).UTC())
		}
	case st.slowLogged:
		st.slowLogged = false
		s.log.Info("batch time caught up with this leader's clock", "batch_time", time.Unix(0, t).UTC())
	}
	return t
}

// batchTimeAhead is how far the latest batch time this node knows, applied or stamped,
// runs ahead of its clock now; 0 if it does not.
func (s *Sequencer) batchTimeAhead() time.Duration {
	latest := max(s.timed.latest.Load(), s.counters.lastStamp.Load())
	return max(0, time.Duration(latest-s.cfg.Now().UnixNano()))
}
