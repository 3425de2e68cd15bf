package feed

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Report is the result of an append run as lockstep bench nexmark --append prints it (a
// query run's is nexbench.Report). Durations are seconds.
type Report struct {
	Events  int64 `json:"events"`
	Batches int64 `json:"batches"`
	// AppendS is the time the appends took, AppendRate the events over it.
	AppendS    float64 `json:"append_s"`
	AppendRate float64 `json:"append_events_per_s"`
}

// Report returns r as a Report.
func (r Result) Report() Report {
	return Report{Events: r.Events, Batches: r.Batches, AppendS: r.Elapsed.Seconds(), AppendRate: r.EventsPerSec}
}

// WriteTable prints the report as aligned rows.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "events\t%d\n", r.Events)
	fmt.Fprintf(tw, "append\t%.3fs, %d batches, %.0f events/s\n", r.AppendS, r.Batches, r.AppendRate)
	return tw.Flush()
}

// OutOfOrderness is the out-of-orderness a query over this feed's events needs for no
// event to be late: twice MaxDisorderMs, at least a second.
func (c Config) OutOfOrderness() time.Duration {
	return max(time.Second, 2*time.Duration(c.MaxDisorderMs())*time.Millisecond)
}
