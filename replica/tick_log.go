package replica

import (
	"log/slog"
	"time"
)

// tickLog rate-limits the log line for failed OnTick calls (partition.ProcessStats
// TickErrors): a hook failing in every processor phase would otherwise write a line per
// entry. The count and the dead letter are replicated state (lockstep processors,
// lockstep_processor_tick_errors_total); the line only points at them, so it may use the
// wall clock. Used on the apply goroutine only.
type tickLog struct {
	every      time.Duration    // at most one line per this much time; tickLogEvery if 0
	now        func() time.Time // time.Now if nil
	last       time.Time        // when the last line was written
	suppressed int              // tick errors since the last line that no line reported
}

// tickLogEvery is the least time between two tick-error lines.
const tickLogEvery = 10 * time.Second

// failed reports n failed ticks of one entry, first the first of them, at log index.
func (l *tickLog) failed(log *slog.Logger, index uint64, n int, first error) {
	if n == 0 {
		return
	}
	now := time.Now
	if l.now != nil {
		now = l.now
	}
	every := l.every
	if every == 0 {
		every = tickLogEvery
	}
	t := now()
	if !l.last.IsZero() && t.Sub(l.last) < every {
		l.suppressed += n
		return
	}
	log.Error("processor tick failed (counted, and dead-lettered in INPUT.dead when its error changes: see lockstep processors)",
		"index", index, "err", first, "tick_errors", n, "tick_errors_not_logged_before", l.suppressed)
	l.last, l.suppressed = t, 0
}
