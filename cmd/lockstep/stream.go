package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/lockstepdb/lockstep/client"
	"github.com/urfave/cli/v2"
)

// streamReadBatch is the most records asked for in one read.
const streamReadBatch = 1024

func streamCommand() *cli.Command {
	return &cli.Command{
		Name:  "stream",
		Usage: "read output streams",
		Subcommands: []*cli.Command{{
			Name:      "read",
			Usage:     "print the records of one partition of an output stream, with their offsets",
			ArgsUsage: "STREAM",
			Description: `Prints the records of partition --partition of output stream STREAM from offset --from
on, and stops at the end of the stream, or after --max records; with --follow it keeps
polling for new records until interrupted (Ctrl-C). Any replica answers: offsets are the
same on every replica, so a consumer may switch nodes without gaps or duplicates. A
stream has one log per partition; "lockstep cluster status" shows the partition count.
--output json prints one JSON object per line: stream, partition, offset, data (base64)
and text (the record as a string, when it is valid UTF-8).

Examples:
  lockstep invoke stream.append --key user-7 --args '{"Stream": "events", "Record": "aGVsbG8="}'
  lockstep stream read events --partition 3 --from 0
  lockstep stream read events --partition 3 --from 42 --follow --output json`,
			Flags: withClientFlags(
				&cli.IntFlag{Name: "partition", Aliases: []string{"p"}, Usage: "stream partition to read"},
				&cli.Uint64Flag{Name: "from", Usage: "offset of the first record to print"},
				&cli.IntFlag{Name: "max", Usage: "print at most this many records (0: no limit)"},
				&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep polling for new records until interrupted"},
				&cli.DurationFlag{Name: "poll", Usage: "pause between polls that found nothing, with --follow", Value: 200 * time.Millisecond},
				outputFlag(outputTable),
			),
			Action: runStreamRead,
		}},
	}
}

// recordJSON is one line of `lockstep stream read --output json`.
type recordJSON struct {
	// Stream, Partition and Offset say where the record is.
	Stream    string `json:"stream"`
	Partition int    `json:"partition"`
	Offset    uint64 `json:"offset"`
	// Data is the record (base64 in JSON); Text the same as a string, if it is UTF-8.
	Data []byte  `json:"data"`
	Text *string `json:"text,omitempty"`
}

func runStreamRead(c *cli.Context) error {
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	if c.NArg() != 1 {
		return errors.New("stream read needs exactly one STREAM name")
	}
	stream, part, limit := c.Args().First(), c.Int("partition"), c.Int("max")
	if limit < 0 || c.Duration("poll") <= 0 {
		return errors.New("--max must not be negative and --poll must be positive")
	}
	follow := c.Bool("follow")
	sigCtx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Without --follow the whole command has --timeout; with it, each request has.
	ctx, cancel, err := commandContext(c)
	if err != nil {
		return err
	}
	defer cancel()
	cl, err := openClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
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
			fmt.Fprintf(out, "%-10s %s\n", "OFFSET", "RECORD")
			headed = true
		}
		if err := printRecords(out, format, stream, part, recs); err != nil {
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

func printRecords(w io.Writer, format, stream string, part int, recs []client.Record) error {
	for _, r := range recs {
		if format == outputTable {
			if _, err := fmt.Fprintf(w, "%-10d %s\n", r.Offset, bytesText(r.Data)); err != nil {
				return err
			}
			continue
		}
		line := recordJSON{Stream: stream, Partition: part, Offset: r.Offset, Data: r.Data}
		if utf8.Valid(r.Data) {
			s := string(r.Data)
			line.Text = &s
		}
		b, err := json.Marshal(line)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
			return err
		}
	}
	return nil
}
