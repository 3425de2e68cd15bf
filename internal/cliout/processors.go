package cliout

import (
	"fmt"
	"io"
	"time"

	"github.com/lockstepdb/lockstep/client"
)

// watermarkLayout renders a watermark: RFC 3339 in UTC, with milliseconds (event times
// are Unix milliseconds).
const watermarkLayout = "2006-01-02T15:04:05.000Z07:00"

// Processors prints the stream processors' state, one row per processor and partition
// (`lockstep processors`); JSON lists every window operator apart.
func Processors(w io.Writer, format string, sts []client.ProcessorStatus) error {
	if sts == nil {
		sts = []client.ProcessorStatus{} // [] in JSON
	}
	if format == JSON {
		return WriteJSON(w, sts)
	}
	tw := NewTable(w)
	fmt.Fprintln(tw, "PROCESSOR\tINPUT\tPARTITION\tPOSITION\tEND\tLAG\tWATERMARK\tLATE\tDEAD\tSKIPPED\tTICKERR\tSTATE\tVERSION\tORIGIN")
	for _, st := range sts {
		wm, late := WindowCells(st.Windows)
		state := "running"
		switch {
		case st.Waiting:
			state = "waiting"
		case st.TickFailing:
			state = "tick-failing"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%d\t%d\t%d\t%s\t%d\t%s\n", st.Processor, st.Input, st.Partition,
			st.Position, st.End, st.Lag, wm, late, st.DeadLetters, st.Skipped, st.TickErrors, state, st.Version, Dash(st.Origin))
	}
	return tw.Flush()
}

// WindowCells renders a processor's window operators as its WATERMARK and LATE cells: the
// lowest watermark (how far event time has surely progressed for all of them; "-" while
// one has none) and the sum of their late counts; "-" for both with no operator.
func WindowCells(ws []client.WindowStatus) (watermark, late string) {
	if len(ws) == 0 {
		return "-", "-"
	}
	var n uint64
	var low time.Time
	all, first := true, true
	for _, w := range ws {
		n += w.Late
		t, ok := w.WatermarkTime()
		switch {
		case !ok:
			all = false
		case first || t.Before(low):
			low, first = t, false
		}
	}
	if !all {
		return "-", fmt.Sprint(n)
	}
	return low.UTC().Format(watermarkLayout), fmt.Sprint(n)
}
