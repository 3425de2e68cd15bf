package demo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// The pipeline demo's producers: closed-loop clients appending batches of clicks with
// event times from a simulated clock that runs clickSpeed times faster than the wall clock,
// starts at a window's start and ends at least clickLead behind the wall clock, so that
// one-minute windows pass every few seconds. Clicks come out of order: most up to
// clickJitter behind the simulated clock, within the pipeline's out-of-orderness, and a
// share clickStragglerShare, the stragglers, 40 to 80 s behind on purpose, to arrive
// after their window fired (a revision) or closed (the late stream). A straggler is never
// older than the clock's start, so no window holds stragglers alone.
const (
	clickSpeed          = 12
	clickLead           = 90 * time.Second
	clickBatch          = 100
	clickPages          = 20
	clickUsers          = 2000
	clickJitter         = 4 * time.Second
	clickStragglerShare = 0.02
	clickStragglerAge   = 40 * time.Second
)

// clickClock maps wall time to the producers' simulated event time.
type clickClock struct {
	wallStart time.Time
	eventZero int64 // Unix ms of event time at wallStart, a window's start
}

// newClickClock returns the clock of a run of d from wallStart whose event time starts at
// a multiple of window.
func newClickClock(wallStart time.Time, d, window time.Duration) clickClock {
	span := time.Duration(clickSpeed) * d
	zero := wallStart.Add(-span - clickLead).UnixMilli()
	return clickClock{wallStart: wallStart, eventZero: zero - zero%window.Milliseconds()}
}

func (c clickClock) now() int64 { return c.at(time.Now()) }

// at returns the event time at wall time t.
func (c clickClock) at(t time.Time) int64 {
	return c.eventZero + t.Sub(c.wallStart).Milliseconds()*clickSpeed
}

// clickWindowKey names one page's one-minute window.
type clickWindowKey struct {
	page  string
	start int64
}

// clickID is what the late stream tells of a click.
type clickID struct {
	page, user string
	time       int64
}

// clickTally is what the producers were told: per window, the clicks acknowledged and
// those whose outcome is unknown (the client gave up on them); and the stragglers sent,
// to tell late clicks generated late on purpose from the others.
type clickTally struct {
	mu              sync.Mutex
	acked, unknown  map[clickWindowKey]int64
	stragglers      map[clickID]int // sent, acknowledged or not
	ackedN, unknwnN atomic.Int64
	slowestAppend   atomic.Int64 // nanoseconds, of the acknowledged batches
	window          time.Duration
}

func newClickTally(window time.Duration) *clickTally {
	return &clickTally{acked: map[clickWindowKey]int64{}, unknown: map[clickWindowKey]int64{},
		stragglers: map[clickID]int{}, window: window}
}

// add records a batch: its clicks, which of them are stragglers, its outcome and how
// long its append took.
func (t *clickTally) add(clicks []builtin.Click, straggler []bool, acked bool, took time.Duration) {
	size := t.window.Milliseconds()
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.unknown
	if acked {
		m = t.acked
	}
	for i, c := range clicks {
		m[clickWindowKey{c.Page, c.Time - c.Time%size}]++
		if straggler[i] {
			t.stragglers[clickID{c.Page, c.User, c.Time}]++
		}
	}
	if acked {
		t.ackedN.Add(int64(len(clicks)))
		for {
			old := t.slowestAppend.Load()
			if int64(took) <= old || t.slowestAppend.CompareAndSwap(old, int64(took)) {
				break
			}
		}
	} else {
		t.unknwnN.Add(int64(len(clicks)))
	}
}

// takeStraggler reports whether a click like c was sent as a straggler, and if so
// forgets one such straggler, so that each one explains one late click at most.
func (t *clickTally) takeStraggler(c builtin.Click) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	id := clickID{c.Page, c.User, c.Time}
	if t.stragglers[id] == 0 {
		return false
	}
	t.stragglers[id]--
	return true
}

// produceClicks runs one closed-loop producer until ctx ends: each round appends one batch
// of clicks through the client's exactly-once session, retried across the leader kill.
func produceClicks(ctx context.Context, cl *client.Client, stream string, seed uint64, clock clickClock, t *clickTally) {
	rng := rand.New(rand.NewPCG(seed, 0x636c69636b73))
	clicks := make([]builtin.Click, clickBatch)
	straggler := make([]bool, clickBatch)
	recs := make([]client.StreamRecord, clickBatch)
	for ctx.Err() == nil {
		now := clock.now()
		for i := range clicks {
			age := rng.Int64N(clickJitter.Milliseconds())
			straggler[i] = false
			if rng.Float64() < clickStragglerShare {
				if a := clickStragglerAge.Milliseconds() + rng.Int64N(clickStragglerAge.Milliseconds()); a <= now-clock.eventZero {
					age, straggler[i] = a, true
				}
			}
			c := builtin.Click{User: fmt.Sprintf("u%04d", rng.IntN(clickUsers)), Page: fmt.Sprintf("/p%02d", rng.IntN(clickPages)), Time: max(now-age, clock.eventZero)}
			v, err := msgpack.Marshal(&c)
			if err != nil {
				panic(err) // a fixed struct always encodes
			}
			clicks[i] = c
			recs[i] = client.StreamRecord{Key: []byte(c.User), Value: v, EventTime: time.UnixMilli(c.Time)}
		}
		// The batch outlives the run's end: stopping mid-call would leave its outcome
		// unknown; a minute bounds it if the cluster cannot answer at all.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		start := time.Now()
		_, err := cl.AppendBatch(actx, stream, recs)
		cancel()
		t.add(clicks, straggler, err == nil, time.Since(start))
	}
}
