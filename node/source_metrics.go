package node

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// sourceCollector exports this node's source workers (sources.go) at scrape time: per
// Kafka partition the group assigns this node, the stored next offset and the lag
// behind the partition's last stable offset; per source, whether the worker runs and
// how many runs it had. A partition is exported by the node that reads it, so the sum
// over the nodes is the source's lag.
type sourceCollector struct {
	n                      *Node
	lag, next, running, ru *prometheus.Desc
}

func newSourceCollector(n *Node) *sourceCollector {
	part := []string{"source", "topic", "partition"}
	return &sourceCollector{n: n,
		lag: prometheus.NewDesc(MetricSourceLag,
			"Committed Kafka records of the partition not yet brought into the stream (last stable offset - stored next offset), per partition this node reads.", part, nil),
		next: prometheus.NewDesc("lockstep_source_next_offset",
			"The Kafka offset stored in Lockstep as the next to bring in, per partition this node reads.", part, nil),
		running: prometheus.NewDesc("lockstep_source_worker_running",
			"1 while this node's worker of the source is a member of its group, 0 while it waits to restart.", []string{"source"}, nil),
		ru: prometheus.NewDesc("lockstep_source_worker_runs_total",
			"Runs of this node's worker of the source (1 + restarts after a failure).", []string{"source"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.lag, c.next, c.running, c.ru} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *sourceCollector) Collect(ch chan<- prometheus.Metric) {
	for _, w := range c.n.SourceWorkers() {
		running := 0.0
		if w.Running {
			running = 1
		}
		ch <- prometheus.MustNewConstMetric(c.running, prometheus.GaugeValue, running, w.Source)
		ch <- prometheus.MustNewConstMetric(c.ru, prometheus.CounterValue, float64(w.Runs), w.Source)
		for _, p := range w.Partitions {
			k := strconv.Itoa(int(p.Partition))
			ch <- prometheus.MustNewConstMetric(c.next, prometheus.GaugeValue, float64(p.Next), w.Source, p.Topic, k)
			if p.End >= 0 {
				ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(p.Lag), w.Source, p.Topic, k)
			}
		}
	}
}
