package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// TestBatchDelta: the batch sizes are the difference between the two scrapes, bucket by
// bucket, with the percentiles' upper bounds and the batches past the last bucket.
func TestBatchDelta(t *testing.T) {
	hist := func(count uint64, sum float64, cum ...uint64) *dto.Histogram {
		h := &dto.Histogram{SampleCount: proto.Uint64(count), SampleSum: proto.Float64(sum)}
		for i, c := range cum {
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(float64(int(1) << i)), CumulativeCount: proto.Uint64(c)})
		}
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(math.Inf(1)), CumulativeCount: proto.Uint64(count)})
		return h
	}
	// Before: 10 batches of 1. After: 100 more — 10 of 1, 60 of 2, 25 of 3–4, 5 larger.
	before := hist(10, 10, 10, 10, 10)
	after := hist(110, 10+10+120+90+100, 20, 80, 105)
	b := BatchDelta(before, after)
	want := Batches{Batches: 100, Inputs: 320, MeanInputs: 3.2, P50AtMost: 2, P99AtMost: 0, Larger: 5,
		Buckets: []BatchBucket{{1, 10}, {2, 60}, {4, 25}}}
	if b == nil || b.Batches != want.Batches || b.Inputs != want.Inputs || b.MeanInputs != want.MeanInputs ||
		b.P50AtMost != want.P50AtMost || b.P99AtMost != want.P99AtMost || b.Larger != want.Larger || len(b.Buckets) != 3 {
		t.Fatalf("got %+v, want %+v", b, want)
	}
	for i, bk := range want.Buckets {
		if b.Buckets[i] != bk {
			t.Errorf("bucket %d: got %+v, want %+v", i, b.Buckets[i], bk)
		}
	}
	var w bytes.Buffer
	b.WriteText(&w)
	if !strings.Contains(w.String(), "100, mean 3.2 inputs, p50 ≤ 2") || !strings.Contains(w.String(), "more: 5.0%") {
		t.Errorf("text: got %q", w.String())
	}
	if BatchDelta(nil, after) != nil || BatchDelta(before, hist(1, 1, 1)) != nil {
		t.Error("a missing histogram or other buckets: want nil")
	}
}
