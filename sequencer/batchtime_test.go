package sequencer

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstepdb/lockstep/internal/batch"
)

// TestBatchClockStamp walks the leader's batch-time rule (batchtime.go) through a clock
// that follows batch time, a predecessor's entries ahead of it, the slowed advance, the
// catch-up, and a clock that steps back. DESIGN.md section 1: batch time comes from the
// leader's clock and never goes backwards; issue 20: nor does it stand still.
func TestBatchClockStamp(t *testing.T) {
	const s = int64(time.Second)
	var b batchClock
	for i, step := range []struct {
		now, applied, want int64
	}{
		{100 * s, 0, 100 * s},       // the clock, as it is
		{101 * s, 100 * s, 101 * s}, // its own entries applied: the clock
		{102 * s, 200 * s, 200 * s}, // a fast predecessor's entry: go on from it
		{104 * s, 200 * s, 201 * s}, // half of the clock's 2s
		{106 * s, 200 * s, 202 * s}, // again: the lead shrank from 98s to 96s
		{106 * s, 200 * s, 202 * s}, // the clock did not move: neither does batch time
		{300 * s, 200 * s, 300 * s}, // the clock caught up: the clock again
		{250 * s, 300 * s, 300 * s}, // the clock stepped back: never backwards
		{252 * s, 300 * s, 301 * s}, // and then on, at half speed
		{400 * s, 500 * s, 500 * s}, // another leader's later entries: from them, no jump
		{401 * s, 500 * s, 500*s + s/2},
	} {
		if got := b.stamp(step.now, step.applied); got != step.want {
			t.Fatalf("#%d: stamp(now %ds, applied %ds) = %dms, want %dms", i, step.now/s, step.applied/s, got/1e6, step.want/1e6)
		}
	}
}

// TestBatchTimeAfterFastLeader: after a leader whose clock ran an hour fast hands over to
// one with a correct clock, batch time as the replicas run it (batch.NextTime over the
// entries' stamps) keeps advancing — at half the new leader's clock speed, until that
// clock catches up — instead of standing still for the hour (issue 20 item 8). Before,
// the new leader stamped its own clock, an hour behind, and every replica held batch time
// at the fast leader's last stamp.
func TestBatchTimeAfterFastLeader(t *testing.T) {
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	var wall atomic.Int64 // the true time, advanced by the test
	wall.Store(base)
	var mu sync.Mutex
	offsets := map[string]time.Duration{} // each node's clock error
	nodes, leader := newCluster(t, 3, func(c *Config) {
		id := c.NodeID
		c.Now = func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return time.Unix(0, wall.Load()).Add(offsets[id])
		}
	})
	mu.Lock()
	offsets[leader.id] = time.Hour
	mu.Unlock()
	if o := submitWait(t, leader.seq, "fast"); o.err != nil {
		t.Fatalf("Submit on the fast leader: %v", o.err)
	}
	fast := base + int64(time.Hour)
	var target *node
	for _, nd := range nodes {
		if nd != leader {
			target = nd
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := leader.seq.TransferLeadership(ctx, target.id); err != nil {
		t.Fatalf("TransferLeadership(%s): %v", target.id, err)
	}
	if got := waitLeader(t, nodes); got != target {
		t.Fatalf("leader after transfer: %s, want %s", got.id, target.id)
	}
	const steps = 6
	for i := range steps {
		wall.Add(int64(time.Second))
		if o := submitWait(t, target.seq, fmt.Sprint("slow", i)); o.err != nil {
			t.Fatalf("Submit on the new leader: %v", o.err)
		}
	}
	run := runTimes(target.fsm)
	if len(run) < steps+1 {
		t.Fatalf("%d entries applied, want at least %d", len(run), steps+1)
	}
	last := run[len(run)-steps:] // the new leader's entries
	// Its first one or two may stand at the fast leader's time (it learns it by applying
	// the entry); from then on every second of its clock advances batch time by half.
	for i := 2; i < steps; i++ {
		if d := last[i] - last[i-1]; d != int64(time.Second)/batchTimeSlowdown {
			t.Errorf("#%d: batch time advanced %v over a second of the leader's clock, want %v (times %v)",
				i, time.Duration(d), time.Second/batchTimeSlowdown, offsetsOf(last, fast))
		}
	}
	if last[0] < fast {
		t.Errorf("batch time went back from %d to %d", fast, last[0])
	}
	st := target.seq.Stats()
	if st.SlowedBatches < steps-2 || st.BatchTimeAhead < 59*time.Minute {
		t.Errorf("new leader: %d batches slowed, batch time %v ahead; want at least %d and about an hour",
			st.SlowedBatches, st.BatchTimeAhead, steps-2)
	}

	// Once the clock has caught up, batch time is the clock again.
	wall.Add(int64(3 * time.Hour))
	if o := submitWait(t, target.seq, "caught up"); o.err != nil {
		t.Fatalf("Submit: %v", o.err)
	}
	run = runTimes(target.fsm)
	if got, want := run[len(run)-1], wall.Load(); got != want {
		t.Errorf("batch time after the catch-up %d, want the leader's clock %d", got, want)
	}
	if st := target.seq.Stats(); st.BatchTimeAhead != 0 {
		t.Errorf("batch time %v ahead after the catch-up, want 0", st.BatchTimeAhead)
	}
}

// runTimes returns the batch times fsm's entries ran at: their stamps through
// batch.NextTime, as every replica applies them.
func runTimes(fsm *testFSM) []int64 {
	fsm.mu.Lock()
	stamps := slices.Clone(fsm.times)
	fsm.mu.Unlock()
	var last int64
	for i, s := range stamps {
		last = batch.NextTime(last, s)
		stamps[i] = last
	}
	return stamps
}

// offsetsOf renders times relative to ref, for messages.
func offsetsOf(times []int64, ref int64) []time.Duration {
	out := make([]time.Duration, len(times))
	for i, t := range times {
		out[i] = time.Duration(t - ref)
	}
	return out
}

// restoredFSM is a state machine whose Restore brings batch time to t (BatchTimeFSM).
type restoredFSM struct {
	raft.BatchingFSM // nil: only Restore and LastBatchTime are called
	t, restored      int64
}

func (f *restoredFSM) Restore(io.ReadCloser) error { f.restored = f.t; return nil }
func (f *restoredFSM) LastBatchTime() int64        { return f.restored }

// TestTimedFSMRestore: after a snapshot is restored, the latest batch time the sequencer
// knows is the snapshot's (so a leader restored from one goes on from it), and an entry
// applied after it raises it.
func TestTimedFSMRestore(t *testing.T) {
	f := &timedFSM{BatchingFSM: &restoredFSM{t: 5000}}
	if err := f.Restore(io.NopCloser(strings.NewReader(""))); err != nil {
		t.Fatal(err)
	}
	if got := f.latest.Load(); got != 5000 {
		t.Fatalf("latest after restore %d, want 5000", got)
	}
	f.see(&raft.Log{Type: raft.LogCommand, Data: batch.AppendEntry(nil, &batch.Entry{Time: 7000})})
	f.see(&raft.Log{Type: raft.LogCommand, Data: batch.AppendEntry(nil, &batch.Entry{Time: 6000})})
	f.see(&raft.Log{Type: raft.LogNoop})
	if got := f.latest.Load(); got != 7000 {
		t.Fatalf("latest after entries at 7000 and 6000: %d, want 7000", got)
	}
}
