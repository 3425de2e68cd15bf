package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// records is a slog.Handler that keeps every record's "suppressed" count (-1 if absent).
type records struct {
	mu  sync.Mutex
	got []int64
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	n := int64(-1)
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "suppressed" {
			n = a.Value.Int64()
		}
		return true
	})
	r.mu.Lock()
	r.got = append(r.got, n)
	r.mu.Unlock()
	return nil
}

func (r *records) lines() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.got...)
}

// TestBurstThenCount: within one interval only Burst lines are written; the next line
// written carries the count of the events left out.
func TestBurstThenCount(t *testing.T) {
	h := &records{}
	l := New(slog.New(h), slog.LevelWarn, "refused", Config{Interval: time.Hour, Burst: 3})
	defer l.Stop()
	for range 1000 {
		l.Log("k", "v")
	}
	if got := h.lines(); len(got) != 3 {
		t.Fatalf("got %d lines for 1000 events in one interval, want 3", len(got))
	}
	// A new interval: the first line carries the 997 left out.
	l.mu.Lock()
	l.start = time.Now().Add(-2 * time.Hour)
	l.mu.Unlock()
	l.Log("k", "v")
	l.Log("k", "v")
	got := h.lines()
	if len(got) != 5 || got[3] != 997 || got[4] != -1 {
		t.Fatalf("got lines %v, want [-1 -1 -1 997 -1]", got)
	}
}

// TestFlushAfterFlood: a flood that stops is counted in a line of its own when its
// interval ends.
func TestFlushAfterFlood(t *testing.T) {
	h := &records{}
	l := New(slog.New(h), slog.LevelWarn, "refused", Config{Interval: 20 * time.Millisecond, Burst: 2})
	defer l.Stop()
	for range 50 {
		l.Log()
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(h.lines()) < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := h.lines(); len(got) != 3 || got[2] != 48 {
		t.Fatalf("got lines %v, want [-1 -1 48]", got)
	}
}

// TestStopDisarms: after Stop the limiter's timer writes nothing.
func TestStopDisarms(t *testing.T) {
	h := &records{}
	l := New(slog.New(h), slog.LevelWarn, "refused", Config{Interval: 10 * time.Millisecond, Burst: 1})
	l.Log()
	l.Log()
	l.Stop()
	time.Sleep(50 * time.Millisecond) // past the interval: a flush would have run
	if got := h.lines(); len(got) != 1 {
		t.Fatalf("got %d lines after Stop, want 1", len(got))
	}
}

// TestDisabledLevel: an event below the logger's level costs nothing and writes nothing.
func TestDisabledLevel(t *testing.T) {
	l := New(slog.New(slog.DiscardHandler), slog.LevelDebug, "x", Config{})
	l.Log("k", "v")
	if l.suppressed != 0 || l.lines != 0 {
		t.Fatal("a disabled event was counted")
	}
}

// TestStaleFlushWritesNothing: a flush timer that fired while a Log disarmed it (its
// function already waiting for the lock) writes no line once it runs, so the interval
// that Log began keeps its Burst: before, the stale count line reset the interval's
// line count to 1 and Burst-1 more lines followed.
func TestStaleFlushWritesNothing(t *testing.T) {
	r := &records{}
	l := New(slog.New(r), slog.LevelInfo, "ev", Config{Interval: time.Hour, Burst: 2})
	defer l.Stop()
	l.Log()
	l.Log()
	l.Log() // suppressed: arms timer 1
	l.mu.Lock()
	stale := l.armed
	l.start = l.start.Add(-2 * time.Hour) // the interval is over
	l.mu.Unlock()
	l.Log() // a new interval: a line with the count, timer 1 disarmed
	l.Log()
	l.Log() // suppressed: arms timer 2
	l.flushCount(stale)
	l.Log()
	l.Log()
	if got := r.lines(); len(got) != 4 {
		t.Fatalf("lines %v: want 4 (two per interval), a stale flush wrote more", got)
	}
}
