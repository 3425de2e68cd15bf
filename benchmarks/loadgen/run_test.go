package loadgen

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// TestOpenLoopMeasuresFromIntendedStart: at an arrival rate above what the system
// carries, open-loop latency includes the time requests waited for a worker (no
// coordinated omission) and the requests never started are reported as missed; the
// same service time in closed loop reports only the service time.
func TestOpenLoopMeasuresFromIntendedStart(t *testing.T) {
	const service = 20 * time.Millisecond // one worker carries 50/s
	op := func(ctx context.Context, _ int, _ *rand.Rand) error {
		time.Sleep(service)
		return nil
	}
	open, err := Run(context.Background(), Config{Workers: 1, Duration: time.Second, Rate: 200, Op: op})
	if err != nil {
		t.Fatal(err)
	}
	closed, err := Run(context.Background(), Config{Workers: 1, Duration: time.Second, Op: op})
	if err != nil {
		t.Fatal(err)
	}
	// Request i of the open run is due at i×5ms and starts at i×20ms at best: the last
	// ones have waited most of the second.
	if open.Latency.P99 < 500*time.Millisecond {
		t.Errorf("open loop p99: got %v, want ≥ 500ms (queueing behind a 4× overload)", open.Latency.P99)
	}
	if open.Missed < 100 {
		t.Errorf("open loop missed: got %d, want ≥ 100 of 200 scheduled", open.Missed)
	}
	if closed.Latency.P99 > 200*time.Millisecond || closed.Missed != 0 {
		t.Errorf("closed loop: got p99 %v and %d missed, want about %v and 0", closed.Latency.P99, closed.Missed, service)
	}
}

// TestOpenLoopRate: below capacity, an open-loop run schedules the requests of the rate
// asked, and accounts for each: made, or missed when a loaded machine started it too
// late (CI saw 1 of 500 missed under -race); every call made is counted.
func TestOpenLoopRate(t *testing.T) {
	var calls atomic.Int64
	op := func(context.Context, int, *rand.Rand) error { calls.Add(1); return nil }
	res, err := Run(context.Background(), Config{Workers: 4, Duration: time.Second, Warmup: 200 * time.Millisecond, Rate: 500, Op: op})
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Ops + res.Errors + res.Missed; n != 500 || res.Ops < 400 {
		t.Errorf("got %d ops, %d errors and %d missed; want 500 scheduled in all, nearly all made", res.Ops, res.Errors, res.Missed)
	}
	if res.Missed > 0 {
		t.Logf("%d of 500 scheduled requests missed (a loaded machine)", res.Missed)
	}
	if got, want := calls.Load(), 100+res.Ops; got != want {
		t.Errorf("calls: got %d, want the 100 of the warm-up and the %d measured", got, res.Ops)
	}
}

// TestClosedLoopErrorsAndWarmup: errors are counted by type, the warm-up is not
// counted, and the timeline covers the measured seconds.
func TestClosedLoopErrorsAndWarmup(t *testing.T) {
	errA, errB := errors.New("a"), errors.New("b")
	var calls atomic.Int64
	op := func(ctx context.Context, _ int, _ *rand.Rand) error {
		time.Sleep(time.Millisecond)
		switch calls.Add(1) % 4 {
		case 1:
			return errA
		case 2:
			return errB
		}
		return nil
	}
	var progress []Second
	res, err := Run(context.Background(), Config{
		Workers: 3, Duration: 2 * time.Second, Warmup: time.Second, Op: op,
		ErrorType: func(err error) string { return err.Error() },
		Progress:  func(s Second) { progress = append(progress, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops == 0 || res.Errors != res.ErrorTypes["a"]+res.ErrorTypes["b"] || res.ErrorTypes["a"] == 0 || res.ErrorTypes["b"] == 0 {
		t.Fatalf("got %d ops, %d errors %v; want both kinds counted", res.Ops, res.Errors, res.ErrorTypes)
	}
	if total := calls.Load(); res.Ops+res.Errors > total*3/4 {
		t.Errorf("measured %d of %d requests: the warm-up third was counted", res.Ops+res.Errors, total)
	}
	if len(res.Timeline) < 2 || len(res.Timeline) > 3 {
		t.Errorf("timeline: got %d seconds, want 2 (or 3 with a partial last)", len(res.Timeline))
	}
	var sum int64
	for _, s := range res.Timeline {
		sum += s.Ops
	}
	if sum != res.Ops {
		t.Errorf("timeline ops: got %d, want the total %d", sum, res.Ops)
	}
	if len(progress) < 2 || !progress[0].Warmup {
		t.Errorf("progress: got %+v, want a warm-up second first", progress)
	}
}

// TestRunStopsWithContext: a run ends when its context does and says so.
func TestRunStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	op := func(ctx context.Context, _ int, _ *rand.Rand) error {
		<-ctx.Done()
		return ctx.Err()
	}
	start := time.Now()
	res, err := Run(ctx, Config{Workers: 2, Duration: time.Hour, Op: op})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Fatalf("got %v after %v, want the context's error at once", err, time.Since(start))
	}
	if res.Errors != 0 {
		t.Errorf("requests cut short by the end of the run counted as %d errors", res.Errors)
	}
}

// TestRunUntilContextEnds: with Duration 0 a run lasts until its context ends, which is
// its normal end.
func TestRunUntilContextEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	op := func(context.Context, int, *rand.Rand) error { time.Sleep(time.Millisecond); return nil }
	res, err := Run(ctx, Config{Workers: 2, Op: op})
	if err != nil || res.Ops == 0 || res.Elapsed < 400*time.Millisecond || res.Elapsed > 5*time.Second {
		t.Fatalf("got %v after %v with %d ops, want no error after about 500ms", err, res.Elapsed, res.Ops)
	}
}

func TestConfigValidate(t *testing.T) {
	op := func(context.Context, int, *rand.Rand) error { return nil }
	for i, c := range []Config{
		{Duration: time.Second, Op: op},
		{Workers: 1, Duration: -time.Second, Op: op},
		{Workers: 1, Duration: time.Second},
		{Workers: 1, Duration: time.Second, Op: op, Rate: -1},
		{Workers: 1, Duration: time.Second, Op: op, Warmup: -time.Second},
	} {
		if _, err := Run(context.Background(), c); !errors.Is(err, ErrBadConfig) {
			t.Errorf("#%d: got %v, want ErrBadConfig", i, err)
		}
	}
}
