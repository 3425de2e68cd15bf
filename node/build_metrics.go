package node

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstepdb/lockstep/internal/buildinfo"
)

// MetricBuildInfo is the gauge that is always 1 and whose labels say which build the node
// runs: version (as `lockstep --version` prints it and the status reports it), goversion
// and revision (the VCS revision, "" if the build recorded none), as Prometheus'
// <program>_build_info convention has it. A dashboard joins on it to show which nodes of
// a cluster run which binary during a rolling upgrade.
const MetricBuildInfo = "lockstep_build_info"

// newBuildInfoMetric is the node's lockstep_build_info gauge.
func newBuildInfoMetric() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: MetricBuildInfo,
		Help: "Always 1; the labels are the node binary's version, Go version and VCS revision.",
		ConstLabels: prometheus.Labels{
			"version":   Version(),
			"goversion": runtime.Version(),
			"revision":  buildinfo.Revision(),
		},
	})
	g.Set(1)
	return g
}
