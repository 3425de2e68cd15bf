package sequencer

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// hclogAdapter lets hashicorp/raft log through an *slog.Logger. Raft's levels map onto
// slog's (Trace becomes Debug-4); the level filter is the slog handler's, so SetLevel is a
// no-op.
type hclogAdapter struct {
	base    *slog.Logger // with the implied args, without the name
	l       *slog.Logger // base with logger=name
	name    string
	implied []any
}

var _ hclog.Logger = (*hclogAdapter)(nil)

func newHclogAdapter(l *slog.Logger, name string) *hclogAdapter {
	return &hclogAdapter{base: l, l: l.With("logger", name), name: name}
}

func slogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

func (a *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off {
		return
	}
	// hclog.Fmt values are formatted lazily by hclog; slog would print them raw.
	copied := false
	for i, arg := range args {
		f, ok := arg.(hclog.Format)
		if !ok || len(f) == 0 {
			continue
		}
		if !copied {
			args, copied = slices.Clone(args), true // do not change the caller's slice
		}
		format, _ := f[0].(string)
		args[i] = fmt.Sprintf(format, f[1:]...)
	}
	a.l.Log(context.Background(), slogLevel(level), msg, args...)
}

func (a *hclogAdapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }
func (a *hclogAdapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }
func (a *hclogAdapter) Info(msg string, args ...any)  { a.Log(hclog.Info, msg, args...) }
func (a *hclogAdapter) Warn(msg string, args ...any)  { a.Log(hclog.Warn, msg, args...) }
func (a *hclogAdapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }

func (a *hclogAdapter) enabled(level hclog.Level) bool {
	return a.l.Enabled(context.Background(), slogLevel(level))
}

func (a *hclogAdapter) IsTrace() bool { return a.enabled(hclog.Trace) }
func (a *hclogAdapter) IsDebug() bool { return a.enabled(hclog.Debug) }
func (a *hclogAdapter) IsInfo() bool  { return a.enabled(hclog.Info) }
func (a *hclogAdapter) IsWarn() bool  { return a.enabled(hclog.Warn) }
func (a *hclogAdapter) IsError() bool { return a.enabled(hclog.Error) }

func (a *hclogAdapter) ImpliedArgs() []any { return a.implied }

func (a *hclogAdapter) With(args ...any) hclog.Logger {
	return &hclogAdapter{
		base:    a.base.With(args...),
		l:       a.l.With(args...),
		name:    a.name,
		implied: append(a.implied[:len(a.implied):len(a.implied)], args...),
	}
}

func (a *hclogAdapter) Name() string { return a.name }

func (a *hclogAdapter) Named(name string) hclog.Logger {
	if a.name != "" {
		name = a.name + "." + name
	}
	return a.ResetNamed(name)
}

func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	return &hclogAdapter{base: a.base, l: a.base.With("logger", name), name: name, implied: a.implied}
}

func (a *hclogAdapter) SetLevel(hclog.Level) {}

func (a *hclogAdapter) GetLevel() hclog.Level {
	for _, lv := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if a.enabled(lv) {
			return lv
		}
	}
	return hclog.Off
}

func (a *hclogAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(a.StandardWriter(opts), "", 0)
}

func (a *hclogAdapter) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	level := hclog.Info
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = opts.ForceLevel
	}
	return stdWriter{a: a, level: level}
}

// stdWriter turns lines written by a standard library logger into log records.
type stdWriter struct {
	a     *hclogAdapter
	level hclog.Level
}

func (w stdWriter) Write(p []byte) (int, error) {
	w.a.Log(w.level, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
