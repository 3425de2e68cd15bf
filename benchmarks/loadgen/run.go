package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstepdb/lockstep/internal/latency"
)

// ErrBadConfig is returned by Config.Validate and Run for an invalid Config.
var ErrBadConfig = errors.New("loadgen: bad config")

// Op is one request: worker is the caller's index (0 ≤ worker < Workers), rng its own
// random source, which only that worker uses.
type Op func(ctx context.Context, worker int, rng *rand.Rand) error

// Config describes a run.
type Config struct {
	// Workers is how many requests may be outstanding at once: in closed loop each worker
	// keeps one in flight; in open loop they take the scheduled requests in turn. Required.
	Workers int
	// Duration is how long the measured part of the run lasts; 0 runs until ctx ends,
	// which is then the run's normal end (Run returns no error for it).
	Duration time.Duration
	// Warmup runs requests for this long first without recording them. Default 0.
	Warmup time.Duration
	// Rate, when positive, makes the run open loop: this many requests per second (over
	// warm-up and measurement), latency measured from each one's intended start. Zero is
	// closed loop.
	Rate float64
	// Op is the request. Required.
	Op Op
	// ErrorType names an error's type for Result.Errors. Default: every error is "error".
	ErrorType func(error) string
	// Progress, when set, is called once a second with the second that just ended (during
	// warm-up too, with Second.Warmup set), from one goroutine of the run.
	Progress func(Second)
}

// Validate checks c.
func (c Config) Validate() error {
	switch {
	case c.Workers < 1:
		return fmt.Errorf("%w: workers %d: want at least 1", ErrBadConfig, c.Workers)
	case c.Duration < 0:
		return fmt.Errorf("%w: duration %v: want a positive duration, or 0 to run until the context ends", ErrBadConfig, c.Duration)
	case c.Warmup < 0:
		return fmt.Errorf("%w: warm-up %v: want zero or a positive duration", ErrBadConfig, c.Warmup)
	case c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0):
		return fmt.Errorf("%w: rate %v: want zero (closed loop) or a positive number of requests per second", ErrBadConfig, c.Rate)
	case c.Op == nil:
		return fmt.Errorf("%w: no Op", ErrBadConfig)
	}
	return nil
}

// Second is one second of a run.
type Second struct {
	// At is the second's end, from the start of the measured part (negative or zero
	// during warm-up).
	At time.Duration
	// Warmup is set for seconds of the warm-up.
	Warmup bool
	// Ops and Errors are the requests that completed in the second, with and without an
	// error.
	Ops, Errors int64
	// Latency is the successful requests' latencies of the second (zero in warm-up).
	Latency latency.Summary
}

// Result is what a run measured (warm-up excluded).
type Result struct {
	// Ops and Errors count the measured requests that succeeded and that failed.
	Ops, Errors int64
	// Missed counts, in open loop, requests scheduled in the measured period that no
	// worker could start before the end: the rate was more than the system (or Workers)
	// could carry.
	Missed int64
	// Elapsed is the measured period, to the return of the last request.
	Elapsed time.Duration
	// Latency is the successful requests' latencies: from their start in closed loop,
	// from their intended start in open loop.
	Latency latency.Summary
	// ErrorTypes counts the errors by Config.ErrorType.
	ErrorTypes map[string]int64
	// Timeline is the measured run second by second.
	Timeline []Second
}

// Throughput returns successful requests per second.
func (r Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// ErrorTypeNames returns the keys of ErrorTypes, sorted.
func (r Result) ErrorTypeNames() []string {
	names := make([]string, 0, len(r.ErrorTypes))
	for n := range r.ErrorTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (r Result) String() string {
	s := fmt.Sprintf("%.0f ops/s  p50 %s  p99 %s  p99.9 %s  max %s  (%d ops, %d errors)",
		r.Throughput(), r.Latency.P50, r.Latency.P99, r.Latency.P999, r.Latency.Max, r.Ops, r.Errors)
	if r.Missed > 0 {
		s += fmt.Sprintf(", %d scheduled requests missed", r.Missed)
	}
	return s
}

// run is the state of one Run, shared by its workers and its ticker.
type run struct {
	cfg                    Config
	start, measured, end   time.Time
	window, total          *latency.Recorder
	ok, errs, warm, warmEr atomic.Int64 // this second's completions: measured, warm-up
	next                   atomic.Int64 // open loop: the next scheduled request
	mu                     sync.Mutex
	errTypes               map[string]int64
}

// Run runs cfg and returns what it measured. If ctx ends first, it stops early and
// returns what it measured so far with ctx's error.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if cfg.ErrorType == nil {
		cfg.ErrorType = func(error) string { return "error" }
	}
	r := &run{cfg: cfg, window: latency.New(), total: latency.New(), errTypes: map[string]int64{}}
	r.start = time.Now()
	r.measured = r.start.Add(cfg.Warmup)
	r.end = r.measured.Add(cfg.Duration)
	if cfg.Duration == 0 {
		r.end = r.measured.Add(100 * 365 * 24 * time.Hour) // until ctx ends
	}

	var timeline []Second
	tickDone, tickStop := make(chan struct{}), make(chan struct{})
	go func() { // the ticker: closes a window each second until the workers are done
		defer close(tickDone)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-tickStop:
				return
			case now := <-t.C:
				s := r.closeWindow(now, false)
				if !s.Warmup {
					timeline = append(timeline, s)
				}
				if cfg.Progress != nil {
					cfg.Progress(s)
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			if cfg.Rate > 0 {
				r.openWorker(ctx, w, rng)
			} else {
				r.closedWorker(ctx, w, rng)
			}
		}()
	}
	wg.Wait()
	close(tickStop)
	<-tickDone
	// The last, partial second.
	if s := r.closeWindow(time.Now(), true); !s.Warmup && s.Ops+s.Errors > 0 {
		timeline = append(timeline, s)
	}
	res := Result{
		Elapsed:    time.Since(r.measured),
		Latency:    r.total.Summary(),
		ErrorTypes: r.errTypes,
		Timeline:   timeline,
	}
	for _, s := range timeline { // every measured request is in one of its seconds
		res.Ops += s.Ops
		res.Errors += s.Errors
	}
	if cfg.Rate > 0 {
		until := cfg.Warmup + cfg.Duration
		if stopped := time.Since(r.start); cfg.Duration == 0 || stopped < until {
			until = stopped // ended early: what was scheduled until then
		}
		scheduled := slotsBefore(until, cfg.Rate) - slotsBefore(cfg.Warmup, cfg.Rate)
		res.Missed = max(scheduled-res.Ops-res.Errors, 0)
	}
	if res.Elapsed < 0 {
		res.Elapsed = 0
	}
	if cfg.Duration == 0 {
		return res, nil
	}
	return res, ctx.Err()
}

// slotsBefore returns how many requests an open-loop run at rate schedules before d.
func slotsBefore(d time.Duration, rate float64) int64 {
	return int64(math.Ceil(d.Seconds() * rate))
}

// closeWindow ends the second that ends at now and returns it; final is the run's last,
// partial one.
func (r *run) closeWindow(now time.Time, final bool) Second {
	at := now.Sub(r.measured).Round(time.Millisecond)
	// The ticks are a second apart from the start; one that falls just after the end of
	// the warm-up (a whole number of seconds) closes the warm-up, and the requests measured
	// since go into the next window.
	if final && now.Before(r.measured) || !final && at < 500*time.Millisecond {
		return Second{At: at, Warmup: true, Ops: r.warm.Swap(0), Errors: r.warmEr.Swap(0)}
	}
	// Warm-up completions in the second the measured period began are dropped.
	r.warm.Swap(0)
	r.warmEr.Swap(0)
	lat := r.window.TakeInto(r.total)
	return Second{At: at, Ops: r.ok.Swap(0), Errors: r.errs.Swap(0), Latency: lat}
}

// closedWorker keeps one request in flight until the end.
func (r *run) closedWorker(ctx context.Context, w int, rng *rand.Rand) {
	for ctx.Err() == nil {
		t := time.Now()
		if !t.Before(r.end) {
			return
		}
		err := r.cfg.Op(ctx, w, rng)
		r.done(ctx, t, err)
	}
}

// openWorker takes scheduled requests in turn, waits for each one's intended start and
// runs it, until the schedule reaches the end or the run is past it.
func (r *run) openWorker(ctx context.Context, w int, rng *rand.Rand) {
	interval := float64(time.Second) / r.cfg.Rate
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for ctx.Err() == nil {
		i := r.next.Add(1) - 1
		intended := r.start.Add(time.Duration(float64(i) * interval))
		if !intended.Before(r.end) {
			return
		}
		if d := time.Until(intended); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		} else if !time.Now().Before(r.end) {
			return // behind schedule and out of time: the rest is Missed
		}
		err := r.cfg.Op(ctx, w, rng)
		r.done(ctx, intended, err)
	}
}

// done records a request that started (or was meant to start) at t; a request cut
// short by the end of ctx is not recorded.
func (r *run) done(ctx context.Context, t time.Time, err error) {
	switch {
	case err != nil && ctx.Err() != nil:
		return
	case t.Before(r.measured) && err != nil:
		r.warmEr.Add(1)
		return
	case t.Before(r.measured):
		r.warm.Add(1)
		return
	}
	if err != nil {
		r.errs.Add(1)
		name := r.cfg.ErrorType(err)
		r.mu.Lock()
		r.errTypes[name]++
		r.mu.Unlock()
		return
	}
	r.window.Record(time.Since(t))
	r.ok.Add(1)
}
