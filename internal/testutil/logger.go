package testutil

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Logger returns a logger that writes lines at level and above to t.Log until the test
// ends; later lines, from goroutines that outlive the test, are dropped rather than
// panic. Logs from components under test go to t.Log this way (STYLE.md).
func Logger(t testing.TB, level slog.Level) *slog.Logger {
	w := &logWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// logWriter sends log lines to t.Log until done.
type logWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Helper()
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// SyncBuffer is a log destination a test reads while the code under test writes to it
// from other goroutines.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
