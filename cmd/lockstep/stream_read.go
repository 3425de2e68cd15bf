package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lockstepdb/lockstep/internal/recordjson"
	"github.com/urfave/cli/v2"
)

// streamReadBatch is the most records asked for in one read.
const streamReadBatch = 1024

func runStreamRead(c *cli.Context) error {
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	stream, err := oneStreamName(c, "read")
	if err != nil {
		return err
	}
	part, limit := c.Int("partition"), c.Int("max")
	if limit < 0 || c.Duration("poll") <= 0 {
		return errors.New("--max must not be negative and --poll must be positive")
	}
	follow := c.Bool("follow")
	vt, err := streamValueType(c, stream)
	if err != nil {
		return err
	}
	sigCtx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Without --follow the whole command has --timeout; with it, each request has.
	ctx, cl, done, err := adminCommand(c)
	if err != nil {
		return err
	}
	defer done()
	if follow {
		ctx = sigCtx
	}
	out := c.App.Writer
	next, printed, headed := c.Uint64("from"), 0, false
	for {
		n := streamReadBatch
		if limit > 0 {
			n = min(n, limit-printed)
		}
		rctx, rcancel := context.WithTimeout(ctx, c.Duration("timeout"))
		recs, nx, err := cl.ReadStream(rctx, stream, part, next, n)
		rcancel()
		if err != nil {
			if follow && sigCtx.Err() != nil {
				return nil // interrupted: a normal end of --follow
			}
			return fmt.Errorf("read stream %q partition %d at offset %d: %w", stream, part, next, err)
		}
		if format == outputTable && !headed {
			fmt.Fprintf(out, "%-10s %-24s %-16s %s\n", "OFFSET", "EVENT TIME", "KEY", "VALUE")
			headed = true
		}
		if err := recordjson.WriteRecords(out, format, stream, part, vt, recs); err != nil {
			return err
		}
		printed += len(recs)
		next = nx
		if limit > 0 && printed >= limit {
			return nil
		}
		if len(recs) > 0 {
			continue
		}
		if !follow {
			return nil
		}
		select {
		case <-sigCtx.Done():
			return nil
		case <-time.After(c.Duration("poll")):
		}
	}
}
