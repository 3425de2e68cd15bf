package replica

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestTickLogRateLimited: failed processor ticks write a log line with the error at once,
// then at most one line per interval, which counts the failures not logged before it.
func TestTickLogRateLimited(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	clock := time.Unix(1_700_000_000, 0)
	l := tickLog{every: 10 * time.Second, now: func() time.Time { return clock }}
	cause := errors.New("processor w, partition 1: tick: stream out: unknown stream")
	steps := []struct {
		advance time.Duration
		n       int
		line    string // "" for no line
	}{
		{0, 2, "tick_errors=2 tick_errors_not_logged_before=0"},
		{time.Second, 2, ""},
		{time.Second, 0, ""},
		{5 * time.Second, 3, ""},
		{3 * time.Second, 1, "tick_errors=1 tick_errors_not_logged_before=5"},
		{time.Hour, 0, ""},
		{0, 1, "tick_errors=1 tick_errors_not_logged_before=0"},
	}
	for i, s := range steps {
		clock = clock.Add(s.advance)
		buf.Reset()
		l.failed(log, uint64(i), s.n, cause)
		got := buf.String()
		if s.line == "" {
			if got != "" {
				t.Fatalf("#%d: got line %q, want none", i, got)
			}
			continue
		}
		if !strings.Contains(got, s.line) || !strings.Contains(got, cause.Error()) || !strings.Contains(got, "level=ERROR") {
			t.Fatalf("#%d: got %q, want a line with %q and the error", i, got, s.line)
		}
	}
}
