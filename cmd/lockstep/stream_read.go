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
	"github.com/lockstepdb/lockstep/procedures/schema"
	"github.com/urfave/cli/v2"
)

// streamReadBatch is the most records asked for in one read.
const streamReadBatch = 1024

// recordJSON is one line of `lockstep stream read --output json`.
type recordJSON struct {
	// Stream, Partition and Offset say where the record is.
	Stream    string `json:"stream"`
	Partition int    `json:"partition"`
	Offset    uint64 `json:"offset"`
	// Key is the record's key (base64 in JSON); KeyText the same as a string, if UTF-8.
	Key     []byte  `json:"key"`
	KeyText *string `json:"key_text,omitempty"`
	// EventTime is the record's event time, RFC 3339 with milliseconds, UTC.
	EventTime string `json:"event_time"`
	// Data is the record's value (base64 in JSON); Text the same as a string, if UTF-8.
	Data []byte  `json:"data"`
	Text *string `json:"text,omitempty"`
	// Value is the value as JSON of its type, for a stream whose value type is known
	// (--value-type), or, for a stream of raw bytes, the bytes themselves when they are a
	// JSON document; ValueError says why a value is not one of the stream's type.
	Value      any    `json:"value,omitempty"`
	ValueError string `json:"value_error,omitempty"`
}

// eventTimeFormat prints event times: RFC 3339, milliseconds, UTC.
const eventTimeFormat = "2006-01-02T15:04:05.000Z07:00"

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
		if err := printRecords(out, format, stream, part, vt, recs); err != nil {
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

// printRecords prints records of one partition, their values as JSON of vt if not nil.
func printRecords(w io.Writer, format, stream string, part int, vt *schema.Type, recs []client.Record) error {
	for _, r := range recs {
		if format == outputTable {
			if _, err := fmt.Fprintf(w, "%-10d %-24s %-16s %s\n", r.Offset, r.EventTime.Format(eventTimeFormat), bytesText(r.Key), valueCell(vt, r.Data)); err != nil {
				return err
			}
			continue
		}
		line := recordJSON{Stream: stream, Partition: part, Offset: r.Offset, Key: r.Key,
			EventTime: r.EventTime.Format(eventTimeFormat), Data: r.Data}
		if utf8.Valid(r.Data) {
			s := string(r.Data)
			line.Text = &s
		}
		if utf8.Valid(r.Key) {
			k := string(r.Key)
			line.KeyText = &k
		}
		switch {
		case vt != nil:
			if v, err := decodeValue(vt, r.Data); err != nil {
				line.ValueError = err.Error()
			} else {
				line.Value = v
			}
		case json.Valid(r.Data):
			line.Value = json.RawMessage(r.Data) // raw bytes that are a JSON document
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
