package window

import "errors"

// Errors returned by the package. They are wrapped with context; test with errors.Is.
var (
	// ErrBadConfig is returned by NewWatermark and New for an invalid configuration.
	ErrBadConfig = errors.New("window: bad config")
	// ErrTimeRange is returned for an event time outside MinTime..MaxTime.
	ErrTimeRange = errors.New("window: event time out of range")
	// ErrCorrupt is returned when a row the package wrote cannot be read back: its table
	// was written by something else. Nothing is changed.
	ErrCorrupt = errors.New("window: corrupt state")
)

// Limits on times and durations, all in milliseconds. They keep every sum the package
// computes (a window's end plus the allowed lateness, a batch time less the
// out-of-orderness) inside int64, so no arithmetic can overflow.
const (
	// MinTime is the earliest event time accepted (about 73 million years before 1970).
	MinTime = -(1 << 61)
	// MaxTime is the latest event time accepted.
	MaxTime = 1 << 61
	// MaxSpan is the longest window size, slide, gap, out-of-orderness, lateness or idle
	// timeout accepted (about 36 million years).
	MaxSpan = 1 << 59
	// NoWatermark is the watermark before any record was seen: every window is open.
	NoWatermark = -1 << 63
)

// checkTime reports whether t is a valid event time.
func checkTime(t int64) error {
	if t < MinTime || t > MaxTime {
		return ErrTimeRange
	}
	return nil
}

// checkSpan reports whether d is a valid non-negative duration.
func checkSpan(d int64) bool { return d >= 0 && d <= MaxSpan }
