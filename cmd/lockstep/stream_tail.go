package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/recordjson"
	"github.com/lockstepdb/lockstep/procedures/schema"
	"github.com/urfave/cli/v2"
)

func streamTailCommand() *cli.Command {
	return &cli.Command{
		Name:      "tail",
		Usage:     "print a stream's new records from every partition as they arrive, until interrupted",
		ArgsUsage: "STREAM",
		Description: `Follows every partition of STREAM at once and prints each record as it is applied:
partition, offset, event time, key, value (one JSON object a line with --output json).
Values of a stream whose value type is known are printed as JSON (see stream append,
--value-type).
It starts at each partition's end, or with --from-beginning at its first retained offset,
and runs until interrupted (Ctrl-C).

It is a push subscription (client.SubscribeAll): a ready node sends each record as it
applies it, within a credit window, so nothing is polled. If that node stops or stops
serving, the subscription moves to another one and goes on from the next record not yet
printed: offsets are the same on every node, so nothing is skipped or repeated. If
retention trims records before they are printed, tail says so on stderr and goes on from
the first record kept.

Example:
  lockstep stream tail page_counts
  lockstep stream tail clicks --from-beginning --output json`,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "from-beginning", Usage: "start at each partition's first retained record instead of its end"},
			valueTypeFlag(),
			outputFlag(outputTable),
		}, clientFlags()...),
		Action: runStreamTail,
	}
}

func runStreamTail(c *cli.Context) error {
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	stream, err := oneStreamName(c, "tail")
	if err != nil {
		return err
	}
	ctx, cl, done, err := adminCommand(c)
	if err != nil {
		return err
	}
	defer done()
	vt, err := streamValueType(c, stream)
	if err != nil {
		return err
	}
	desc, err := cl.Streams().Describe(ctx, stream)
	if err != nil {
		return fmt.Errorf("stream tail %s: %w", stream, err)
	}
	sigCtx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// from is where each partition goes on: its end, or (absent) its first retained record.
	from := map[int]uint64{}
	if !c.Bool("from-beginning") {
		for _, p := range desc.Partitions {
			from[int(p.Partition)] = p.NextOffset
		}
	}
	if format == outputTable {
		fmt.Fprintf(c.App.Writer, "%-9s %-10s %-24s %-16s %s\n", "PARTITION", "OFFSET", "EVENT TIME", "KEY", "VALUE")
	}
	for {
		err := tail(sigCtx, c, cl, stream, format, vt, from)
		var trimmed *client.OffsetTrimmedError
		switch {
		case sigCtx.Err() != nil:
			return nil
		case errors.As(err, &trimmed):
			fmt.Fprintf(c.App.ErrWriter, "stream tail %s: partition %d: records %d to %d were trimmed by retention before they were printed\n",
				stream, trimmed.Partition, trimmed.Offset, trimmed.First-1)
			from[trimmed.Partition] = trimmed.First
		default:
			return fmt.Errorf("stream tail %s: %w", stream, err)
		}
	}
}

// tail subscribes to every partition of stream from the offsets of from (absent: the
// first retained) and prints the records until ctx ends or the subscription does; from is
// kept at the next offset to print of each partition that printed something.
func tail(ctx context.Context, c *cli.Context, cl *client.Client, stream, format string, vt *schema.Type, from map[int]uint64) error {
	sctx, cancel := context.WithTimeout(ctx, c.Duration("timeout"))
	sub, err := cl.SubscribeAll(sctx, stream, from)
	cancel()
	if err != nil {
		return err
	}
	defer sub.Close()
	for {
		recs, err := sub.Next(ctx)
		if err != nil {
			return err
		}
		for run := range client.PartitionRuns(recs) { // print each partition's run as one batch
			if err := recordjson.WriteTail(c.App.Writer, format, stream, vt, run); err != nil {
				return err
			}
			from[run[0].Partition] = run[len(run)-1].Offset + 1
		}
	}
}
