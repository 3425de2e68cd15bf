package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/urfave/cli/v2"
)

func streamTailCommand() *cli.Command {
	return &cli.Command{
		Name:      "tail",
		Usage:     "print a stream's new records from every partition as they arrive, until interrupted",
		ArgsUsage: "STREAM",
		Description: `Follows every partition of STREAM at once and prints each record as it is applied:
partition, offset, event time, key, value (one JSON object a line with --output json).
It starts at each partition's end, or with --from-beginning at its first retained offset,
and runs until interrupted (Ctrl-C). Any ready node answers; offsets are the same on
every node, so nothing is skipped or repeated when reads move between nodes.

It polls each partition (--poll between reads that found nothing); push subscriptions
with flow control are planned to replace the polling.

Example:
  lockstep stream tail page_counts
  lockstep stream tail clicks --from-beginning --output json`,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "from-beginning", Usage: "start at each partition's first retained record instead of its end"},
			&cli.DurationFlag{Name: "poll", Usage: "pause between reads of a partition that found nothing", Value: 200 * time.Millisecond},
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
	if c.NArg() != 1 {
		return errors.New("stream tail needs exactly one STREAM name")
	}
	if c.Duration("poll") <= 0 {
		return errors.New("--poll must be positive")
	}
	stream := c.Args().First()
	ctx, cl, done, err := adminCommand(c)
	if err != nil {
		return err
	}
	defer done()
	desc, err := cl.DescribeStream(ctx, stream)
	if err != nil {
		return fmt.Errorf("stream tail %s: %w", stream, err)
	}
	sigCtx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	t := &tailer{c: c, cl: cl, stream: stream, format: format}
	if format == outputTable {
		fmt.Fprintf(c.App.Writer, "%-9s %-10s %-24s %-16s %s\n", "PARTITION", "OFFSET", "EVENT TIME", "KEY", "VALUE")
	}
	errs := make(chan error, len(desc.Partitions))
	var wg sync.WaitGroup
	for _, p := range desc.Partitions {
		from := p.NextOffset
		if c.Bool("from-beginning") {
			from = p.FirstOffset
		}
		wg.Go(func() { errs <- t.follow(sigCtx, int(p.Partition), from) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// tailer follows the partitions of one stream and prints their records, one partition's
// batch at a time so that lines never interleave.
type tailer struct {
	c      *cli.Context
	cl     *client.Client
	stream string
	format string
	mu     sync.Mutex // serialises printing
}

// follow prints partition part's records from offset next on until ctx ends (a normal
// end) or a read fails.
func (t *tailer) follow(ctx context.Context, part int, next uint64) error {
	for {
		rctx, cancel := context.WithTimeout(ctx, t.c.Duration("timeout"))
		recs, nx, err := t.cl.ReadStream(rctx, t.stream, part, next, streamReadBatch)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, client.ErrOffsetTrimmed):
			next = nx // retention trimmed what was not printed yet: go on from the first kept
			continue
		case err != nil:
			return fmt.Errorf("tail %s partition %d at offset %d: %w", t.stream, part, next, err)
		}
		if err := t.print(part, recs); err != nil {
			return err
		}
		next = nx
		if len(recs) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(t.c.Duration("poll")):
		}
	}
}

func (t *tailer) print(part int, recs []client.Record) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.c.App.Writer
	if t.format != outputTable {
		return printRecords(w, t.format, t.stream, part, recs)
	}
	for _, r := range recs {
		if _, err := fmt.Fprintf(w, "%-9d %-10d %-24s %-16s %s\n", part, r.Offset, r.EventTime.Format(eventTimeFormat), bytesText(r.Key), bytesText(r.Data)); err != nil {
			return err
		}
	}
	return nil
}
