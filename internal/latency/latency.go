// Package latency records request latencies into HDR histograms (hdrhistogram-go), safe
// for many goroutines, for the demo, the benchmarks and the fault-injection harness.
package latency

import (
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Recorder is a concurrent latency histogram from 1 µs to 1 minute, 3 significant digits.
// A latency over a minute is counted as one minute, never dropped: an overloaded
// open-loop run must not lose exactly its slowest requests.
type Recorder struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

// maxMicros is the longest latency a Recorder tells apart, in microseconds.
const maxMicros = int64(time.Minute / time.Microsecond)

// New returns an empty Recorder.
func New() *Recorder {
	return &Recorder{h: hdrhistogram.New(1, maxMicros, 3)}
}

// Record adds one latency.
func (r *Recorder) Record(d time.Duration) {
	us := min(max(d.Microseconds(), 1), maxMicros)
	r.mu.Lock()
	r.h.RecordValue(us)
	r.mu.Unlock()
}

// Summary is a histogram's count and percentiles.
type Summary struct {
	Count                          int64
	Mean, P50, P90, P99, P999, Max time.Duration
}

// Summary returns the percentiles recorded so far.
func (r *Recorder) Summary() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	return summarize(r.h)
}

// Take returns the percentiles recorded so far and starts a new, empty window.
func (r *Recorder) Take() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := summarize(r.h)
	r.h.Reset()
	return s
}

// TakeInto returns the percentiles recorded so far, adds every value to total and
// starts a new, empty window, in one step: a value recorded meanwhile lands either in
// this window (and in total) or in the next, never in neither. total must not be r.
func (r *Recorder) TakeInto(total *Recorder) Summary {
	r.mu.Lock()
	s := summarize(r.h)
	snap := hdrhistogram.Import(r.h.Export())
	r.h.Reset()
	r.mu.Unlock()
	total.mu.Lock()
	total.h.Merge(snap)
	total.mu.Unlock()
	return s
}

// Merge adds every value of other into r.
func (r *Recorder) Merge(other *Recorder) {
	other.mu.Lock()
	snap := hdrhistogram.Import(other.h.Export())
	other.mu.Unlock()
	r.mu.Lock()
	r.h.Merge(snap)
	r.mu.Unlock()
}

func summarize(h *hdrhistogram.Histogram) Summary {
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	return Summary{
		Count: h.TotalCount(),
		Mean:  time.Duration(h.Mean() * float64(time.Microsecond)),
		P50:   us(h.ValueAtQuantile(50)),
		P90:   us(h.ValueAtQuantile(90)),
		P99:   us(h.ValueAtQuantile(99)),
		P999:  us(h.ValueAtQuantile(99.9)),
		Max:   us(h.Max()),
	}
}
