package window

import "fmt"

// Window is the half-open interval of event time [Start, End), in Unix milliseconds.
type Window struct {
	Start int64
	End   int64
}

// Contains reports whether event time t falls in w.
func (w Window) Contains(t int64) bool { return w.Start <= t && t < w.End }

// Overlaps reports whether w and o share at least one instant. Windows that only touch
// ([0,10) and [10,20)) do not overlap.
func (w Window) Overlaps(o Window) bool { return w.Start < o.End && o.Start < w.End }

func (w Window) String() string { return fmt.Sprintf("[%d,%d)", w.Start, w.End) }

// An Assigner maps an event time to the windows it falls in. The set is closed: Tumbling,
// Hopping and Session.
type Assigner interface {
	// Assign appends to dst the windows event time t falls in, by ascending start, and
	// returns the extended slice. For Session it is the record's own window, before
	// merging with the sessions already open.
	Assign(t int64, dst []Window) []Window
	validate() error
}

// Tumbling assigns each event time to exactly one window of Size milliseconds; windows
// are aligned to the Unix epoch: [k·Size, (k+1)·Size).
type Tumbling struct {
	Size int64
}

// Assign appends the one window t falls in.
func (a Tumbling) Assign(t int64, dst []Window) []Window {
	start := floorTo(t, a.Size)
	return append(dst, Window{start, start + a.Size})
}

func (a Tumbling) validate() error {
	if a.Size <= 0 || a.Size > MaxSpan {
		return fmt.Errorf("%w: tumbling size %d not in 1..%d", ErrBadConfig, a.Size, MaxSpan)
	}
	return nil
}

// MaxHops is the most windows a Hopping assigner may put one event time in.
const MaxHops = 1024

// Hopping assigns each event time to the Size/Slide windows (rounded up) of Size
// milliseconds that start every Slide milliseconds, aligned to the Unix epoch:
// [k·Slide, k·Slide+Size). Slide is at most Size, so every event time falls in at least
// one window; Slide == Size is Tumbling. Size/Slide is at most MaxHops, which bounds the
// work and state per record.
type Hopping struct {
	Size  int64
	Slide int64
}

// Assign appends every window containing t, by ascending start.
func (a Hopping) Assign(t int64, dst []Window) []Window {
	last := floorTo(t, a.Slide) // the latest window start at or before t
	first := last
	for first-a.Slide > t-a.Size {
		first -= a.Slide
	}
	for s := first; s <= last; s += a.Slide {
		dst = append(dst, Window{s, s + a.Size})
	}
	return dst
}

func (a Hopping) validate() error {
	if a.Size <= 0 || a.Size > MaxSpan {
		return fmt.Errorf("%w: hopping size %d not in 1..%d", ErrBadConfig, a.Size, MaxSpan)
	}
	if a.Slide <= 0 || a.Slide > a.Size {
		return fmt.Errorf("%w: hopping slide %d not in 1..size %d", ErrBadConfig, a.Slide, a.Size)
	}
	if (a.Size+a.Slide-1)/a.Slide > MaxHops {
		return fmt.Errorf("%w: hopping size %d / slide %d: more than %d windows per record", ErrBadConfig, a.Size, a.Slide, MaxHops)
	}
	return nil
}

// Session groups the event times of one key into sessions: two records are in the same
// session when their event times differ by less than Gap milliseconds, or are linked by
// a chain of such records. A record's own window is [t, t+Gap); a session is the union of
// its records' windows, [first, last+Gap).
type Session struct {
	Gap int64
}

// Assign appends the record's own window [t, t+Gap).
func (a Session) Assign(t int64, dst []Window) []Window {
	return append(dst, Window{t, t + a.Gap})
}

func (a Session) validate() error {
	if a.Gap <= 0 || a.Gap > MaxSpan {
		return fmt.Errorf("%w: session gap %d not in 1..%d", ErrBadConfig, a.Gap, MaxSpan)
	}
	return nil
}

// floorTo rounds t down to a multiple of size (size > 0), also for negative t.
func floorTo(t, size int64) int64 {
	r := t % size
	if r < 0 {
		r += size
	}
	return t - r
}
