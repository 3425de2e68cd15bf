package node

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// processorCollector exports each processor's lag and dead-letter count per partition,
// read from the replicated processor state (replica.FSM.Processors) at scrape time.
type processorCollector struct {
	n           *Node
	lag, letter *prometheus.Desc
}

func newProcessorCollector(n *Node) *processorCollector {
	labels := []string{"processor", "partition"}
	return &processorCollector{n: n,
		lag: prometheus.NewDesc("lockstep_processor_lag",
			"Records of the input stream the processor has not handled yet, per partition.", labels, nil),
		letter: prometheus.NewDesc("lockstep_processor_dead_letters_total",
			"Records the processor failed on, sent to the dead-letter stream, per partition.", labels, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *processorCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lag
	ch <- c.letter
}

// Collect implements prometheus.Collector.
func (c *processorCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.n.fsm.Processors() {
		part := strconv.Itoa(st.Partition)
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(st.Lag), st.Processor, part)
		ch <- prometheus.MustNewConstMetric(c.letter, prometheus.CounterValue, float64(st.DeadLetters), st.Processor, part)
	}
}
