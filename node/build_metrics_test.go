package node

import (
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstepdb/lockstep/internal/buildinfo"
)

// TestBuildInfoMetric: lockstep_build_info is one gauge of value 1 whose labels are the
// version the status reports, the Go version and the VCS revision of this binary.
func TestBuildInfoMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newBuildInfoMetric())
	families, err := reg.Gather()
	if err != nil || len(families) != 1 || families[0].GetName() != MetricBuildInfo || len(families[0].GetMetric()) != 1 {
		t.Fatalf("got %v, %v: want one family %s with one metric", families, err, MetricBuildInfo)
	}
	m := families[0].GetMetric()[0]
	if m.GetGauge().GetValue() != 1 {
		t.Errorf("value %v, want 1", m.GetGauge().GetValue())
	}
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	want := map[string]string{"version": Version(), "goversion": runtime.Version(), "revision": buildinfo.Revision()}
	if len(got) != len(want) {
		t.Errorf("labels %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("label %s: got %q, want %q", k, got[k], v)
		}
	}
}
