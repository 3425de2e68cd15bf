package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/lockstepdb/lockstep/node"
	dto "github.com/prometheus/client_model/go"
)

// Batches is the distribution of the batch sizes (inputs per log entry) of the batches
// applied while a run measured.
type Batches struct {
	Batches    int64   `json:"batches"`
	Inputs     int64   `json:"inputs"`
	MeanInputs float64 `json:"mean_inputs"`
	// P50AtMost and P99AtMost are upper bounds: the histogram's bucket the percentile
	// falls in.
	P50AtMost float64       `json:"p50_at_most"`
	P99AtMost float64       `json:"p99_at_most"`
	Buckets   []BatchBucket `json:"buckets"`
	// Larger counts batches larger than the last bucket's bound.
	Larger int64 `json:"larger"`
}

// BatchBucket counts the batches of more than the previous bucket's bound and at most
// AtMost inputs.
type BatchBucket struct {
	AtMost float64 `json:"at_most"`
	Count  int64   `json:"count"`
}

// batchHistogram returns the batch-size histogram of fams, or nil.
func batchHistogram(fams map[string]*dto.MetricFamily) *dto.Histogram {
	f := fams[node.MetricBatchItems]
	if f == nil || len(f.GetMetric()) != 1 {
		return nil
	}
	return f.GetMetric()[0].GetHistogram()
}

// BatchDelta returns what was added to a batch-size histogram between before and after;
// nil if either is missing or their buckets differ.
func BatchDelta(before, after *dto.Histogram) *Batches {
	bb, ab := finiteBuckets(before), finiteBuckets(after)
	if before == nil || after == nil || len(bb) != len(ab) {
		return nil
	}
	r := &Batches{Batches: int64(after.GetSampleCount() - before.GetSampleCount()),
		Inputs: int64(after.GetSampleSum() - before.GetSampleSum())}
	if r.Batches <= 0 {
		return r
	}
	r.MeanInputs = float64(r.Inputs) / float64(r.Batches)
	var prev int64
	for i, b := range ab {
		cum := int64(b.GetCumulativeCount() - bb[i].GetCumulativeCount())
		r.Buckets = append(r.Buckets, BatchBucket{AtMost: b.GetUpperBound(), Count: cum - prev})
		if r.P50AtMost == 0 && cum*2 >= r.Batches {
			r.P50AtMost = b.GetUpperBound()
		}
		if r.P99AtMost == 0 && cum*100 >= r.Batches*99 {
			r.P99AtMost = b.GetUpperBound()
		}
		prev = cum
	}
	r.Larger = r.Batches - prev
	return r
}

// finiteBuckets returns h's buckets but the +Inf one, which the text format has and
// a registry's Gather leaves out.
func finiteBuckets(h *dto.Histogram) []*dto.Bucket {
	var out []*dto.Bucket
	for _, b := range h.GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) {
			out = append(out, b)
		}
	}
	return out
}

// WriteText prints the batch sizes as rows of a tab-separated table; b may be nil (not
// known).
func (b *Batches) WriteText(w io.Writer) {
	switch {
	case b == nil:
		fmt.Fprintf(w, "batches\tnot known (give --admin to read them from a node's metrics)\n")
	case b.Batches == 0:
		fmt.Fprintf(w, "batches\tnone applied\n")
	default:
		fmt.Fprintf(w, "batches\t%d, mean %.1f inputs, p50 ≤ %g, p99 ≤ %g\n", b.Batches, b.MeanInputs, b.P50AtMost, b.P99AtMost)
		var parts []string
		for _, bk := range b.Buckets {
			if bk.Count > 0 {
				parts = append(parts, fmt.Sprintf("≤%g: %.1f%%", bk.AtMost, 100*float64(bk.Count)/float64(b.Batches)))
			}
		}
		if b.Larger > 0 {
			parts = append(parts, fmt.Sprintf("more: %.1f%%", 100*float64(b.Larger)/float64(b.Batches)))
		}
		fmt.Fprintf(w, "batch sizes\t%s\n", strings.Join(parts, "  "))
	}
}
