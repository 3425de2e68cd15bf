package node

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// processorCollector exports each processor's state per partition, and that of the window
// operators it declares, read from the applied state (Node.processorStatus, the same rows
// OpProcessors answers with) at scrape time.
type processorCollector struct {
	n                             *Node
	lag, letter, skipped, waiting *prometheus.Desc
	tickErrors                    *prometheus.Desc
	watermark, late               *prometheus.Desc
}

func newProcessorCollector(n *Node) *processorCollector {
	labels := []string{"processor", "partition"}
	opLabels := []string{"processor", "operator", "partition"}
	return &processorCollector{n: n,
		lag: prometheus.NewDesc("lockstep_processor_lag",
			"Records of the input stream the processor has not handled yet, per partition.", labels, nil),
		letter: prometheus.NewDesc("lockstep_processor_dead_letters_total",
			"Records the processor failed on, sent to the dead-letter stream, per partition.", labels, nil),
		skipped: prometheus.NewDesc("lockstep_processor_skipped_total",
			"Records retention trimmed before the processor reached them, per partition.", labels, nil),
		tickErrors: prometheus.NewDesc("lockstep_processor_tick_errors_total",
			"OnTick calls of the processor that failed (dead-lettered at each change of the error), per partition.", labels, nil),
		waiting: prometheus.NewDesc("lockstep_processor_waiting",
			"1 while the processor's input stream does not exist on the partition, else 0.", labels, nil),
		watermark: prometheus.NewDesc("lockstep_window_watermark_seconds",
			"Watermark of a window operator the processor declares, in Unix seconds, per partition; absent before its first record.", opLabels, nil),
		late: prometheus.NewDesc("lockstep_window_late_records_total",
			"Records that fell in no open window of the operator, per partition.", opLabels, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *processorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.lag, c.letter, c.skipped, c.tickErrors, c.waiting, c.watermark, c.late} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. An operator whose rows are corrupt is exported
// without a watermark (processorStatus); the scrape goes on.
func (c *processorCollector) Collect(ch chan<- prometheus.Metric) {
	sts, _ := c.n.processorStatus()
	for _, st := range sts {
		part := strconv.Itoa(st.Partition)
		waiting := 0.0
		if st.Waiting {
			waiting = 1
		}
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(st.Lag), st.Processor, part)
		ch <- prometheus.MustNewConstMetric(c.letter, prometheus.CounterValue, float64(st.DeadLetters), st.Processor, part)
		ch <- prometheus.MustNewConstMetric(c.skipped, prometheus.CounterValue, float64(st.Skipped), st.Processor, part)
		ch <- prometheus.MustNewConstMetric(c.tickErrors, prometheus.CounterValue, float64(st.TickErrors), st.Processor, part)
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, waiting, st.Processor, part)
		for _, w := range st.Windows {
			if w.HasWatermark {
				ch <- prometheus.MustNewConstMetric(c.watermark, prometheus.GaugeValue, float64(w.Watermark)/1000, st.Processor, w.Operator, part)
			}
			ch <- prometheus.MustNewConstMetric(c.late, prometheus.CounterValue, float64(w.Late), st.Processor, w.Operator, part)
		}
	}
}
