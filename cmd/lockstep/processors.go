package main

import (
	"fmt"
	"io"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/urfave/cli/v2"
)

func processorsCommand() *cli.Command {
	return &cli.Command{
		Name:  "processors",
		Usage: "show each stream processor per partition: position, lag, watermark, late, dead letters, skipped, tick errors",
		Description: `Asks one node for its stream processors' state and prints one row per processor and
partition:

  PROCESSOR  the processor's name
  INPUT      the stream it consumes
  PARTITION  the partition
  POSITION   the next offset it handles
  END        the input stream's next offset on the partition
  LAG        END − POSITION: records not handled yet
  WATERMARK  the event-time watermark of the window operators it declares, in UTC
             (the lowest, if several; "-" before their first record, or if it declares
             none)
  LATE       records that fell in no open window of those operators ("-" if none declared)
  DEAD       records it failed on, in the stream INPUT.dead
  SKIPPED    records retention trimmed before it reached them
  TICKERR    its OnTick calls that failed (each new error is a dead letter in INPUT.dead
             with "tick" set and the error text)
  STATE      running; waiting while its input stream does not exist; tick-failing
             while its last OnTick call failed (a window whose output stream is gone)
  VERSION    the running version of its code (name@N, or the module's version)
  ORIGIN     where the code comes from: binary, or module NAME vN (lockstep deploy)

Any node answers, ready or not, from the state it has applied: every replica has the
same state at the same applied index, and one behind the leader shows an older one.
--node chooses the node (its client address); by default the first --addr. With --output json each row also lists every window operator apart.

Examples:
  lockstep processors --addr 127.0.0.1:7401
  lockstep processors --addr 127.0.0.1:7401 --node 127.0.0.1:7402 -o json`,
		Flags: withClientFlags(outputFlag(outputTable),
			&cli.StringFlag{Name: "node", Usage: "client address of the node to ask (default: the first --addr)"}),
		Action: runProcessors,
	}
}

func runProcessors(c *cli.Context) error {
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	ctx, cl, done, err := adminCommand(c)
	if err != nil {
		return err
	}
	defer done()
	node := c.String("node")
	sts, err := cl.Procedures().Processors(ctx, node)
	if err != nil {
		if node != "" {
			return fmt.Errorf("--node %s: %w", node, err)
		}
		return err
	}
	if sts == nil {
		sts = []client.ProcessorStatus{} // [] in JSON
	}
	if format == outputJSON {
		return writeJSON(c.App.Writer, sts)
	}
	return writeProcessorsTable(c.App.Writer, sts)
}

// watermarkLayout renders a watermark: RFC 3339 in UTC, with milliseconds (event times
// are Unix milliseconds).
const watermarkLayout = "2006-01-02T15:04:05.000Z07:00"

// dash renders an empty cell as "-".
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeProcessorsTable(w io.Writer, sts []client.ProcessorStatus) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "PROCESSOR\tINPUT\tPARTITION\tPOSITION\tEND\tLAG\tWATERMARK\tLATE\tDEAD\tSKIPPED\tTICKERR\tSTATE\tVERSION\tORIGIN")
	for _, st := range sts {
		wm, late := windowCells(st.Windows)
		state := "running"
		switch {
		case st.Waiting:
			state = "waiting"
		case st.TickFailing:
			state = "tick-failing"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%d\t%d\t%d\t%s\t%d\t%s\n", st.Processor, st.Input, st.Partition,
			st.Position, st.End, st.Lag, wm, late, st.DeadLetters, st.Skipped, st.TickErrors, state, st.Version, dash(st.Origin))
	}
	return tw.Flush()
}

// windowCells renders a processor's window operators as its WATERMARK and LATE cells: the
// lowest watermark (how far event time has surely progressed for all of them; "-" while
// one has none) and the sum of their late counts; "-" for both with no operator.
func windowCells(ws []client.WindowStatus) (watermark, late string) {
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
