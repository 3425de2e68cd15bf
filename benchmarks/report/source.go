package report

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/lockstepdb/lockstep/node"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// NodeMetrics are one node's metric families by name.
type NodeMetrics struct {
	// Node names the node: its admin address, or its ID in an embedded cluster.
	Node     string
	Families map[string]*dto.MetricFamily
}

// Source returns the metrics of every node that answered, in a fixed order; an error if
// none did.
type Source func(ctx context.Context) ([]NodeMetrics, error)

// scrapeTimeout bounds one scrape of one node's /metrics.
const scrapeTimeout = 5 * time.Second

// AdminSource scrapes /metrics from each of addrs (admin addresses), over HTTPS with
// tlsCfg (a client certificate the nodes accept), or over HTTP when tlsCfg is nil (an
// --insecure cluster).
func AdminSource(addrs []string, tlsCfg *tls.Config) Source {
	scheme, tr := "http://", &http.Transport{DisableKeepAlives: true}
	if tlsCfg != nil {
		scheme, tr.TLSClientConfig = "https://", tlsCfg.Clone()
	}
	hc := &http.Client{Transport: tr, Timeout: scrapeTimeout}
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
	return func(ctx context.Context) ([]NodeMetrics, error) {
		var errs []error
		var out []NodeMetrics
		for _, a := range addrs {
			fams, err := scrape(ctx, a)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, NodeMetrics{Node: a, Families: fams})
		}
		if len(out) == 0 {
			return nil, errors.Join(errs...)
		}
		return out, nil
	}
}

// Gatherer is one node's metrics registry, with the node's name.
type Gatherer struct {
	Node     string
	Registry prometheus.Gatherer
}

// GatherSource gathers the registries nodes returns, each time it is asked: the running
// nodes of an embedded cluster.
func GatherSource(nodes func() []Gatherer) Source {
	return func(context.Context) ([]NodeMetrics, error) {
		var out []NodeMetrics
		for _, g := range nodes() {
			fams, err := g.Registry.Gather()
			if err != nil {
				return nil, err
			}
			m := map[string]*dto.MetricFamily{}
			for _, f := range fams {
				m[f.GetName()] = f
			}
			out = append(out, NodeMetrics{Node: g.Node, Families: m})
		}
		if len(out) == 0 {
			return nil, errors.New("no node running")
		}
		return out, nil
	}
}

// Watch scrapes src when the warm-up ends (warmup from now) and returns a function that
// scrapes it again and reports what changed: the batch sizes (from the first node that
// answered) and the commit round's stages (from every node that answered both times).
// Each is nil when src is nil, a scrape failed, or the run ended before its warm-up.
func Watch(src Source, warmup time.Duration) func() (*Batches, *Round) {
	if src == nil {
		return func() (*Batches, *Round) { return nil, nil }
	}
	scrape := func() []NodeMetrics {
		ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
		defer cancel()
		nodes, err := src(ctx)
		if err != nil {
			return nil
		}
		return nodes
	}
	var before []NodeMetrics
	ready := make(chan struct{})
	timer := time.AfterFunc(warmup, func() {
		before = scrape()
		close(ready)
	})
	return func() (*Batches, *Round) {
		if timer.Stop() {
			return nil, nil // the run ended before its warm-up did
		}
		<-ready
		after := scrape()
		if len(before) == 0 || len(after) == 0 {
			return nil, nil
		}
		return BatchDelta(batchHistogram(before[0].Families), batchHistogram(after[0].Families)), RoundDelta(before, after)
	}
}

// ClusterSource reads the metrics of an embedded cluster's running nodes (GatherSource).
func ClusterSource(c *node.LocalCluster) Source {
	return GatherSource(func() []Gatherer {
		var out []Gatherer
		for _, n := range c.Nodes {
			if n != nil {
				out = append(out, Gatherer{Node: n.ID(), Registry: n.Metrics().Registry})
			}
		}
		return out
	})
}
