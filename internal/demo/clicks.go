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
// event times from a simulated clock that runs clickSpeed times faster than the wall clock
// and ends clickLead behind it, so that one-minute windows pass every few seconds and the
// last ones close by batch time soon after the producers stop. Clicks come out of order:
// most a few seconds behind the simulated clock, some clickStragglerShare far enough behind
// to arrive after their window fired (a revision) or closed (the late stream).
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
	eventZero int64 // Unix ms of event time at wallStart
}

func newClickClock(wallStart time.Time, d time.Duration) clickClock {
	span := time.Duration(clickSpeed) * d
	return clickClock{wallStart: wallStart, eventZero: wallStart.Add(-span - clickLead).UnixMilli()}
}

func (c clickClock) now() int64 {
	return c.eventZero + time.Since(c.wallStart).Milliseconds()*clickSpeed
}

// clickWindowKey names one page's one-minute window.
type clickWindowKey struct {
	page  string
	start int64
}

// clickTally is what the producers were told: per window, the clicks acknowledged and
// those whose outcome is unknown (the client gave up on them).
type clickTally struct {
	mu              sync.Mutex
	acked, unknown  map[clickWindowKey]int64
	ackedN, unknwnN atomic.Int64
	window          time.Duration
}

func newClickTally(window time.Duration) *clickTally {
	return &clickTally{acked: map[clickWindowKey]int64{}, unknown: map[clickWindowKey]int64{}, window: window}
}

func (t *clickTally) add(clicks []builtin.Click, acked bool) {
	size := t.window.Milliseconds()
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.unknown
	if acked {
		m = t.acked
	}
	for _, c := range clicks {
		m[clickWindowKey{c.Page, c.Time - c.Time%size}]++
	}
	if acked {
		t.ackedN.Add(int64(len(clicks)))
	} else {
		t.unknwnN.Add(int64(len(clicks)))
	}
}

// produceClicks runs one closed-loop producer until ctx ends: each round appends one batch
// of clicks through the client's exactly-once session, retried across the leader kill.
func produceClicks(ctx context.Context, cl *client.Client, stream string, seed uint64, clock clickClock, t *clickTally) {
	rng := rand.New(rand.NewPCG(seed, 0x636c69636b73))
	clicks := make([]builtin.Click, clickBatch)
	recs := make([]client.StreamRecord, clickBatch)
	for ctx.Err() == nil {
		now := clock.now()
		for i := range clicks {
			age := rng.Int64N(clickJitter.Milliseconds())
			if rng.Float64() < clickStragglerShare {
				age = clickStragglerAge.Milliseconds() + rng.Int64N(clickStragglerAge.Milliseconds())
			}
			c := builtin.Click{User: fmt.Sprintf("u%04d", rng.IntN(clickUsers)), Page: fmt.Sprintf("/p%02d", rng.IntN(clickPages)), Time: now - age}
			v, err := msgpack.Marshal(&c)
			if err != nil {
				panic(err) // a fixed struct always encodes
			}
			clicks[i] = c
			recs[i] = client.StreamRecord{Key: c.User, Value: v, EventTime: time.UnixMilli(c.Time)}
		}
		// The batch outlives the run's end: stopping mid-call would leave its outcome
		// unknown; a minute bounds it if the cluster cannot answer at all.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		_, err := cl.AppendBatch(actx, stream, recs)
		cancel()
		t.add(clicks, err == nil)
	}
}
