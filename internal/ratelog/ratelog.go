// Package ratelog bounds the log lines a repeated event writes, so that whoever can make
// the event happen cannot fill the disk with log or slow the process down writing it (a
// flood of refused requests, refused connections).
//
// A Limiter stands for one kind of event (one message):
//
//  1. Log writes the event's line, as slog would, while fewer than Burst lines of it were
//     written in the current Interval.
//  2. Past that it only counts the event. The next line written carries the count as the
//     attribute "suppressed": how many events were left out since the line before.
//  3. When an interval ends with events left out and no later event writes a line, one
//     line with the message and the count alone is written then, so a flood that stops is
//     never left uncounted in the log.
//
// Usage:
//
//	denied := ratelog.New(log, slog.LevelWarn, "permission denied", ratelog.Config{})
//	defer denied.Stop()
//	...
//	denied.Log("identity", name, "op", op)
//
// The log says that events happened and how many; metrics count every one of them. A
// Limiter is safe for concurrent use.
package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Defaults of Config.
const (
	DefaultInterval = time.Second
	DefaultBurst    = 5
)

// Config sets how many lines a Limiter writes. Zero fields take the defaults.
type Config struct {
	// Interval is the period lines are counted over. Default DefaultInterval (1s).
	Interval time.Duration
	// Burst is the most lines written per Interval. Default DefaultBurst (5).
	Burst int
}

// Limiter writes the lines of one kind of event at a bounded rate; see the package doc.
type Limiter struct {
	log   *slog.Logger
	level slog.Level
	msg   string
	cfg   Config

	mu         sync.Mutex
	start      time.Time   // the current interval's start
	lines      int         // lines written in the current interval
	suppressed int64       // events left out since the last line
	flush      *time.Timer // armed while events are left out; nil otherwise
	armed      uint64      // timers armed so far: the number of flush's
	stopped    bool
}

// New returns a Limiter writing msg at level to log.
func New(log *slog.Logger, level slog.Level, msg string, cfg Config) *Limiter {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Burst <= 0 {
		cfg.Burst = DefaultBurst
	}
	return &Limiter{log: log, level: level, msg: msg, cfg: cfg}
}

// Log records one event with the attributes args (slog's key-value pairs): a line, or
// a count if this interval's lines are spent.
func (l *Limiter) Log(args ...any) {
	if !l.log.Enabled(context.Background(), l.level) {
		return
	}
	l.mu.Lock()
	now := time.Now()
	if now.Sub(l.start) >= l.cfg.Interval {
		l.start, l.lines = now, 0
	}
	if l.lines >= l.cfg.Burst {
		l.suppressed++
		if l.flush == nil && !l.stopped {
			l.armed++
			gen := l.armed
			l.flush = time.AfterFunc(l.start.Add(l.cfg.Interval).Sub(now), func() { l.flushCount(gen) })
		}
		l.mu.Unlock()
		return
	}
	l.lines++
	if n := l.suppressed; n > 0 {
		args = append(args, "suppressed", n)
		l.suppressed = 0
		l.stopFlush()
	}
	l.mu.Unlock()
	l.log.Log(context.Background(), l.level, l.msg, args...)
}

// flushCount, timer gen's function, writes the count of events left out, if a later
// event did not. A timer that fired while a Log held l.mu and disarmed it (stopFlush
// cannot stop a function already running) is stale: its interval is over, and a count
// line of it would start a new interval's budget again (lines = 1) on top of the lines
// the new interval has written.
func (l *Limiter) flushCount(gen uint64) {
	l.mu.Lock()
	if l.stopped || l.flush == nil || gen != l.armed {
		l.mu.Unlock()
		return
	}
	n := l.suppressed
	l.suppressed, l.flush = 0, nil
	if n > 0 {
		l.start, l.lines = time.Now(), 1
	}
	l.mu.Unlock()
	if n > 0 {
		l.log.Log(context.Background(), l.level, l.msg, "suppressed", n)
	}
}

// stopFlush disarms the flush timer; l.mu is held.
func (l *Limiter) stopFlush() {
	if l.flush != nil {
		l.flush.Stop()
		l.flush = nil
	}
}

// Stop disarms the Limiter's timer, so it writes no count line of its own any more
// (Log still writes). Call it when the Limiter's owner closes.
func (l *Limiter) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	l.stopFlush()
}
