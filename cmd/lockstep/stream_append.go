package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/recordjson"
	"github.com/lockstepdb/lockstep/procedures/schema"
	"github.com/urfave/cli/v2"
)

// appendBatch is the most records of stdin appended in one AppendBatch call.
const appendBatch = 256

func streamAppendCommand() *cli.Command {
	return &cli.Command{
		Name:      "append",
		Usage:     "append records to a stream: one from the command line, or JSON lines from stdin",
		ArgsUsage: "STREAM [VALUE]",
		Description: `With VALUE, appends one record with key --key (its partition is hash(key) mod P) and
event time --event-time (RFC 3339 or Unix milliseconds; default: the batch time) and
prints its offset. For a stream whose value type is known (--value-type; by default the
built-in click pipeline's streams, e.g. demo.clicks takes a builtin.Click) VALUE is JSON
of that type, checked field by field and encoded as a Go program would; otherwise its
bytes are the value.

Without VALUE, reads records from stdin, one JSON object a line, and appends them in
batches of 256, each batch all or nothing, printing each record's offset. A line has the
fields stream read --output json prints (so its output can be fed back): key_text (or key,
base64), event_time (RFC 3339, or a number of milliseconds; absent: the batch time), and
value (JSON of the value type, if the stream's value type is known), else data (base64)
or text (the value as a string), else value (for a stream of raw bytes: the value's JSON
text, compacted, is the bytes); stream, partition, offset and value_error are ignored.
--json with VALUE refuses a VALUE that is not JSON, for a stream of raw bytes.
--timeout bounds the whole command.

Examples:
  lockstep stream create demo.clicks
  lockstep stream append demo.clicks --key alice '{"Page": "/home", "Time": 1700000000000}'
  lockstep stream append events --key k1 --event-time 2023-11-14T22:13:20Z hello
  lockstep stream append events --key k2 --json '{"user": 7, "action": "login"}'
  echo '{"key_text": "k3", "value": {"user": 8}}' | lockstep stream append events
  lockstep stream read demo.clicks -p 0 -o json | lockstep stream append copy --value-type click`,
		Flags: withClientFlags(
			&cli.StringFlag{Name: "key", Aliases: []string{"k"}, Usage: "the record's key, with VALUE"},
			&cli.StringFlag{Name: "event-time", Usage: "the record's event time, with VALUE: RFC 3339 or Unix milliseconds"},
			&cli.BoolFlag{Name: "json", Usage: "with VALUE, for a stream of raw bytes: VALUE must be JSON"},
			valueTypeFlag(),
			outputFlag(outputTable),
		),
		Action: runStreamAppend,
	}
}

func runStreamAppend(c *cli.Context) error {
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	if c.NArg() < 1 || c.NArg() > 2 {
		return errors.New("stream append needs STREAM and VALUE, or STREAM alone to read records from stdin")
	}
	stream := c.Args().First()
	vt, err := streamValueType(c, stream)
	if err != nil {
		return err
	}
	var recs []client.StreamRecord
	single := c.NArg() == 2
	if single {
		rec, err := argRecord(c, vt)
		if err != nil {
			return err
		}
		recs = append(recs, rec)
	} else if c.IsSet("key") || c.IsSet("event-time") {
		return errors.New("--key and --event-time go with VALUE; records from stdin carry their own")
	}
	ctx, cancel, err := commandContext(c)
	if err != nil {
		return err
	}
	defer cancel()
	cl, err := dialClient(ctx, c)
	if err != nil {
		return err
	}
	defer cl.Close()
	var offsets []uint64
	flush := func() error {
		if len(recs) == 0 {
			return nil
		}
		offs, err := cl.AppendBatch(ctx, stream, recs)
		if err != nil {
			return fmt.Errorf("append to %s: %w", stream, err)
		}
		recs = recs[:0]
		if format == outputTable {
			for _, o := range offs {
				fmt.Fprintln(c.App.Writer, o)
			}
		}
		offsets = append(offsets, offs...)
		return nil
	}
	if !single {
		err = recordjson.ReadLines(c.App.Reader, vt, func(r client.StreamRecord) error {
			if recs = append(recs, r); len(recs) == appendBatch {
				return flush()
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if format == outputJSON {
		if offsets == nil {
			offsets = []uint64{}
		}
		return writeJSON(c.App.Writer, offsets)
	}
	return nil
}

// argRecord is the record of the command line: --key, --event-time and VALUE.
func argRecord(c *cli.Context, vt *schema.Type) (client.StreamRecord, error) {
	key := c.String("key")
	if key == "" {
		return client.StreamRecord{}, errors.New("stream append STREAM VALUE needs a non-empty --key")
	}
	var et time.Time
	if s := c.String("event-time"); s != "" {
		var err error
		if et, err = recordjson.ParseEventTime(strconv.Quote(s)); err != nil {
			if et, err = recordjson.ParseEventTime(s); err != nil {
				return client.StreamRecord{}, fmt.Errorf("--event-time %q: want RFC 3339 or Unix milliseconds", s)
			}
		}
	}
	text := []byte(c.Args().Get(1))
	if vt == nil && c.Bool("json") && !json.Valid(text) {
		return client.StreamRecord{}, fmt.Errorf("VALUE %s: not JSON (--json)", text)
	}
	v, err := recordjson.EncodeValue(vt, text)
	if err != nil {
		return client.StreamRecord{}, err
	}
	return client.StreamRecord{Key: []byte(key), Value: v, EventTime: et}, nil
}
