package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/lockstepdb/lockstep/node"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The bench's batch sizes come from a node's metrics: lockstep_batch_items, the items of
// each applied log entry, a histogram every replica keeps alike. The client cannot see
// how the sequencer batched its requests.

// batchMetric is the histogram of the sequencer's batch sizes.
const batchMetric = "lockstep_batch_items"

// nodeFamilies are one node's metric families.
type nodeFamilies struct {
	node string // its admin address, or its ID in an embedded cluster
	fams map[string]*dto.MetricFamily
}

// metricsSource returns the metric families of every node that answered, in a fixed
// order (the --admin order, or the embedded cluster's); an error if none did.
type metricsSource func(ctx context.Context) ([]nodeFamilies, error)

// adminMetrics scrapes /metrics from each of addrs, over HTTPS with tlsCfg (the client
// certificate), or HTTP when tlsCfg is nil (--insecure).
func adminMetrics(addrs []string, tlsCfg *tls.Config) metricsSource {
	scheme, tr := "http://", &http.Transport{DisableKeepAlives: true}
	if tlsCfg != nil {
		scheme, tr.TLSClientConfig = "https://", tlsCfg.Clone()
	}
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	scrape := func(ctx context.Context, a string) (map[string]*dto.MetricFamily, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+a+"/metrics", nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s/metrics: status %s: %v", a, resp.Status, err)
		}
		return fams, nil
	}
	return func(ctx context.Context) ([]nodeFamilies, error) {
		var errs []error
		var out []nodeFamilies
		for _, a := range addrs {
			fams, err := scrape(ctx, a)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, nodeFamilies{node: a, fams: fams})
		}
		if len(out) == 0 {
			return nil, errors.Join(errs...)
		}
		return out, nil
	}
}

// localMetrics gathers the metrics of the running nodes of an embedded cluster.
func localMetrics(c *node.LocalCluster) metricsSource {
	return func(context.Context) ([]nodeFamilies, error) {
		var out []nodeFamilies
		for _, n := range c.Nodes {
			if n == nil {
				continue
			}
			fams, err := n.Metrics().Registry.Gather()
			if err != nil {
				return nil, err
			}
			m := map[string]*dto.MetricFamily{}
			for _, f := range fams {
				m[f.GetName()] = f
			}
			out = append(out, nodeFamilies{node: n.ID(), fams: m})
		}
		if len(out) == 0 {
			return nil, errors.New("no node running")
		}
		return out, nil
	}
}

// batchReport is the distribution of the batch sizes (inputs per log entry) of the
// batches applied while the bench measured.
type batchReport struct {
	Batches    int64   `json:"batches"`
	Inputs     int64   `json:"inputs"`
	MeanInputs float64 `json:"mean_inputs"`
	// P50 and P99 are upper bounds: the histogram's bucket the percentile falls in.
	P50AtMost float64       `json:"p50_at_most"`
	P99AtMost float64       `json:"p99_at_most"`
	Buckets   []batchBucket `json:"buckets"`
	// Larger counts batches larger than the last bucket's bound.
	Larger int64 `json:"larger"`
}

// batchBucket counts the batches of more than the previous bucket's bound and at most
// AtMost inputs.
type batchBucket struct {
	AtMost float64 `json:"at_most"`
	Count  int64   `json:"count"`
}

// batchHistogram returns the batch-size histogram of fams, or nil.
func batchHistogram(fams map[string]*dto.MetricFamily) *dto.Histogram {
	f := fams[batchMetric]
	if f == nil || len(f.GetMetric()) != 1 {
		return nil
	}
	return f.GetMetric()[0].GetHistogram()
}

// batchDelta returns what was added to the histogram between before and after.
func batchDelta(before, after *dto.Histogram) *batchReport {
	bb, ab := finiteBuckets(before), finiteBuckets(after)
	if before == nil || after == nil || len(bb) != len(ab) {
		return nil
	}
	r := &batchReport{Batches: int64(after.GetSampleCount() - before.GetSampleCount()),
		Inputs: int64(after.GetSampleSum() - before.GetSampleSum())}
	if r.Batches <= 0 {
		return r
	}
	r.MeanInputs = float64(r.Inputs) / float64(r.Batches)
	var prev int64
	for i, b := range ab {
		cum := int64(b.GetCumulativeCount() - bb[i].GetCumulativeCount())
		r.Buckets = append(r.Buckets, batchBucket{AtMost: b.GetUpperBound(), Count: cum - prev})
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

// metricsWatch scrapes the nodes when the warm-up ends (after warmup from now) and
// returns a function that scrapes them again and returns what changed: the batch sizes
// (from the first node that answered) and the commit round's stages (from every node
// that answered both times). Each is nil when the target has no metrics or a scrape
// failed.
func (t *benchTarget) metricsWatch(warmup time.Duration) func() (*batchReport, *roundReport) {
	if t.metrics == nil {
		return func() (*batchReport, *roundReport) { return nil, nil }
	}
	scrape := func() []nodeFamilies {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		nodes, err := t.metrics(ctx)
		if err != nil {
			return nil
		}
		return nodes
	}
	var before []nodeFamilies
	ready := make(chan struct{})
	timer := time.AfterFunc(warmup, func() {
		before = scrape()
		close(ready)
	})
	return func() (*batchReport, *roundReport) {
		if timer.Stop() {
			return nil, nil // the run ended before its warm-up did
		}
		<-ready
		after := scrape()
		if len(before) == 0 || len(after) == 0 {
			return nil, nil
		}
		return batchDelta(batchHistogram(before[0].fams), batchHistogram(after[0].fams)), roundDelta(before, after)
	}
}
