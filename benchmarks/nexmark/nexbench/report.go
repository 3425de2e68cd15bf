package nexbench

import (
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/lockstepdb/lockstep/internal/chart"
	"github.com/lockstepdb/lockstep/internal/latency"
)

// Report is what a run measured. Durations are seconds; latencies milliseconds.
type Report struct {
	Query      string  `json:"query"`
	Engine     string  `json:"engine"`
	Nodes      int     `json:"nodes"`
	Partitions int     `json:"partitions"`
	Events     int64   `json:"events"`
	Batches    int64   `json:"batches"`
	Pace       float64 `json:"pace_events_per_s,omitempty"`
	// AppendS is the time the appends took, AppendRate the events over it.
	AppendS    float64 `json:"append_s"`
	AppendRate float64 `json:"append_events_per_s"`
	// DrainedS is the time from the first append until every processor of the query had
	// handled every record (lag 0); Rate, the sustained rate, is the events over it.
	DrainedS float64 `json:"drained_s"`
	Rate     float64 `json:"events_per_s"`
	// EventsPerCore is the events per CPU-second of one replica: events × nodes ÷ the
	// node processes' CPU-seconds over the run (each replica does all the work).
	EventsPerCore float64   `json:"events_per_core_s,omitempty"`
	Replicas      []Replica `json:"replicas,omitempty"`
	// BenchCPUSeconds is the bench process's own CPU time (generator, clients,
	// subscriber), not in EventsPerCore.
	BenchCPUSeconds float64 `json:"bench_cpu_s"`
	// Results is the output records the subscriber saw; Latency their end-to-end latency,
	// from the input reaching the result's event time to the result's delivery.
	Results int64 `json:"results"`
	// StreamBytes are the bytes of the live records' keys and values of the input
	// streams and the query's output stream after the run, on one replica.
	StreamBytes map[string]int64 `json:"stream_bytes"`
	Latency     LatencySummary   `json:"latency_ms"`
	// WindowLatency, for a windowed query, is its results' latency from the watermark
	// that closed their window: from the input reaching the window's end plus the
	// out-of-orderness (the event time whose arrival moves the watermark past the end) to
	// the result's delivery, as Flink and Nexmark report windowed queries; Latency above
	// is the raw figure, the window's wait included. Windows closed only by check's drain
	// or by idleness are in neither.
	WindowLatency *LatencySummary `json:"window_latency_ms,omitempty"`
	// AppendLatency is the breakdown's first part: from a chunk's due time until its
	// appends were answered (committed, on a majority's disk, and applied on the
	// leader, processors included), one per chunk. A result's latency less this is its
	// delivery to the subscriber, and for a window its wait.
	AppendLatency LatencySummary `json:"append_latency_ms"`
	// Checked is set when the result equalled the batch reference, of CheckedRows rows.
	Checked     bool `json:"checked,omitempty"`
	CheckedRows int  `json:"checked_rows,omitempty"`
	// Seconds are the run's seconds, for the chart.
	Seconds []chart.Second `json:"-"`
}

// Replica is one node process's share of a run.
type Replica struct {
	ID                 string  `json:"id"`
	Pid                int     `json:"pid,omitempty"`
	CPUSeconds         float64 `json:"cpu_s"`
	EventsPerCPUSecond float64 `json:"events_per_cpu_s"`
	// DiskBytes is the disk space of its data directory after the run (the Raft log and
	// any snapshot; the partition state itself is in memory), RSSBytes its resident
	// memory then (the partition state, streams included, and the runtime's).
	DiskBytes int64 `json:"disk_bytes"`
	RSSBytes  int64 `json:"rss_bytes"`
}

// LatencySummary is a latency histogram's count and percentiles in milliseconds.
type LatencySummary struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func summary(s latency.Summary) LatencySummary {
	return LatencySummary{Count: s.Count, P50: ms(s.P50), P99: ms(s.P99), P999: ms(s.P999), Max: ms(s.Max)}
}

func reflectLen(v any) int {
	if v == nil {
		return 0
	}
	return reflect.ValueOf(v).Len()
}

// WriteTable writes r for people.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "query\t%s (engine %s), %d nodes, %d partitions\n", r.Query, r.Engine, r.Nodes, r.Partitions)
	fmt.Fprintf(tw, "events\t%d in %d batches\n", r.Events, r.Batches)
	fmt.Fprintf(tw, "append\t%.3fs: %.0f events/s\n", r.AppendS, r.AppendRate)
	fmt.Fprintf(tw, "sustained\t%.0f events/s (lag 0 after %.3fs)\n", r.Rate, r.DrainedS)
	if r.EventsPerCore > 0 {
		fmt.Fprintf(tw, "per core\t%.0f events per CPU-second of a replica\n", r.EventsPerCore)
	}
	for _, x := range r.Replicas {
		fmt.Fprintf(tw, "  %s\tcpu %.2fs, %.0f events/cpu-s, rss %.1f MiB, disk %.1f MiB\n", x.ID, x.CPUSeconds, x.EventsPerCPUSecond,
			float64(x.RSSBytes)/(1<<20), float64(x.DiskBytes)/(1<<20))
	}
	fmt.Fprintf(tw, "bench process\tcpu %.2fs\n", r.BenchCPUSeconds)
	fmt.Fprintf(tw, "results\t%d records; latency p50 %.1f ms, p99 %.1f ms, max %.1f ms (raw: from the input reaching the result's event time)\n",
		r.Results, r.Latency.P50, r.Latency.P99, r.Latency.Max)
	fmt.Fprintf(tw, "  appends\tp50 %.1f ms, p99 %.1f ms, max %.1f ms (a chunk due to its appends answered: commit and apply)\n",
		r.AppendLatency.P50, r.AppendLatency.P99, r.AppendLatency.Max)
	if l := r.WindowLatency; l != nil {
		fmt.Fprintf(tw, "  from watermark\tp50 %.1f ms, p99 %.1f ms, max %.1f ms over %d results (from the watermark closing the window)\n",
			l.P50, l.P99, l.Max, l.Count)
	}
	if len(r.StreamBytes) > 0 {
		fmt.Fprintf(tw, "streams\t")
		for _, k := range slices.Sorted(maps.Keys(r.StreamBytes)) {
			fmt.Fprintf(tw, "%s %.1f MiB  ", k, float64(r.StreamBytes[k])/(1<<20))
		}
		fmt.Fprintln(tw)
	}
	if r.Checked {
		fmt.Fprintf(tw, "check\tequal to the batch reference (%d rows)\n", r.CheckedRows)
	}
	return tw.Flush()
}

// Chart returns the SVG chart of the run: events due per second, result latency.
func (r Report) Chart() []byte {
	return chart.SVG(chart.Run{Seconds: r.Seconds, Unit: "events/s",
		Caption: fmt.Sprintf("nexmark %s, %d nodes · bars: events appended per second · green/orange: p50/p99 result latency (log scale, right)", r.Query, r.Nodes)})
}
