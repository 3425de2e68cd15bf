package main

import (
	"fmt"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/urfave/cli/v2"
)

func streamCommand() *cli.Command {
	return &cli.Command{
		Name:  "stream",
		Usage: "create, list, describe, delete, append to, read and tail streams",
		Subcommands: []*cli.Command{streamCreateCommand(), streamListCommand(), streamDescribeCommand(), streamDeleteCommand(), streamAppendCommand(), streamTailCommand(), {
			Name:      "read",
			Usage:     "print the records of one partition of a stream: offset, event time, key, value",
			ArgsUsage: "STREAM",
			Description: `Prints the records of partition --partition of stream STREAM from offset --from on
(offset, event time, key, value), skipping the gaps key compaction leaves, and stops at the end of the stream, or after --max records; with --follow it keeps
polling for new records until interrupted (Ctrl-C). Any replica answers: offsets are the
same on every replica, so a consumer may switch nodes without gaps or duplicates. A
stream has one log per partition; "lockstep cluster status" shows the partition count.
--output json prints one JSON object per line: stream, partition, offset, key (base64),
key_text, event_time, data (base64) and text (key and value as strings, when valid UTF-8),
and value: for a stream whose value type is known (the built-in pipeline's streams,
dead-letter streams; see --value-type and stream append) the value as JSON of its type
(in the table too), for a stream of raw bytes the bytes when they are a JSON document. Such lines are what stream append reads from stdin.
An offset below the first one retention kept is an error naming that first offset.

Examples:
  lockstep stream create events --max-records 100000
  lockstep invoke stream.append --key user-7 --args '{"Stream": "events", "Record": "aGVsbG8="}'
  lockstep stream read events --partition 3 --from 0
  lockstep stream read events --partition 3 --from 42 --follow --output json`,
			Flags: withClientFlags(
				&cli.IntFlag{Name: "partition", Aliases: []string{"p"}, Usage: "stream partition to read"},
				&cli.Uint64Flag{Name: "from", Usage: "offset of the first record to print"},
				&cli.IntFlag{Name: "max", Usage: "print at most this many records (0: no limit)"},
				&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep polling for new records until interrupted"},
				&cli.DurationFlag{Name: "poll", Usage: "pause between polls that found nothing, with --follow", Value: 200 * time.Millisecond},
				valueTypeFlag(),
				outputFlag(outputTable),
			),
			Action: runStreamRead,
		}},
	}
}

// streamCreateCommand is `lockstep stream create`.
func streamCreateCommand() *cli.Command {
	return &cli.Command{
		Name:      "create",
		Usage:     "create a stream on every partition, with retention and key compaction",
		ArgsUsage: "NAME",
		Description: `Creates stream NAME through the log (stream.create, on every partition at one log
position). Retention trims each partition's log from the front at the end of an append:
--max-records and --max-bytes (keys and values of live records) bound it, --max-age
trims records whose event time is older than the append's batch time minus the age.
0 (the default) leaves a bound off. --compact keeps only the latest record of each key.

Examples:
  lockstep stream create clicks --max-records 100000 --max-age 24h
  lockstep stream create profiles --compact`,
		Flags: withClientFlags(
			&cli.Int64Flag{Name: "max-records", Usage: "most live records per partition (0: no bound)"},
			&cli.Int64Flag{Name: "max-bytes", Usage: "most bytes of keys and values per partition (0: no bound)"},
			&cli.DurationFlag{Name: "max-age", Usage: "trim records older than this, by event time against the batch time (0: no bound)"},
			&cli.BoolFlag{Name: "compact", Usage: "keep only the latest record of each key"},
			outputFlag(outputTable),
		),
		Action: func(c *cli.Context) error {
			name, err := oneStreamName(c, "create")
			if err != nil {
				return err
			}
			age := c.Duration("max-age")
			if age < 0 {
				return fmt.Errorf("--max-age %v must not be negative", age)
			}
			def := builtin.StreamDefinition{Name: name, Compact: c.Bool("compact"), Retention: builtin.StreamRetention{
				MaxRecords: c.Int64("max-records"), MaxBytes: c.Int64("max-bytes"), MaxAgeMs: age.Milliseconds()}}
			return withSession(c, func(cl *client.Client) (any, error) { return def, cl.Streams().Create(c.Context, def) })
		},
	}
}

// streamListCommand is `lockstep stream list`.
func streamListCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list the streams and their definitions",
		Flags: withClientFlags(outputFlag(outputTable)),
		Action: func(c *cli.Context) error {
			return withSession(c, func(cl *client.Client) (any, error) { return cl.Streams().List(c.Context) })
		},
	}
}

// streamDescribeCommand is `lockstep stream describe`.
func streamDescribeCommand() *cli.Command {
	return &cli.Command{
		Name:      "describe",
		Usage:     "show a stream's definition and, per partition, its offsets, records and bytes",
		ArgsUsage: "NAME",
		Flags:     withClientFlags(outputFlag(outputTable)),
		Action: func(c *cli.Context) error {
			name, err := oneStreamName(c, "describe")
			if err != nil {
				return err
			}
			return withSession(c, func(cl *client.Client) (any, error) { return cl.Streams().Describe(c.Context, name) })
		},
	}
}

// streamDeleteCommand is `lockstep stream delete`.
func streamDeleteCommand() *cli.Command {
	return &cli.Command{
		Name:      "delete",
		Usage:     "delete a stream and its records on every partition",
		ArgsUsage: "NAME",
		Flags:     withClientFlags(outputFlag(outputTable)),
		Action: func(c *cli.Context) error {
			name, err := oneStreamName(c, "delete")
			if err != nil {
				return err
			}
			return withSession(c, func(cl *client.Client) (any, error) {
				return builtin.StreamNameArgs{Name: name}, cl.Streams().Delete(c.Context, name)
			})
		},
	}
}

func oneStreamName(c *cli.Context, cmd string) (string, error) {
	if c.NArg() != 1 {
		return "", fmt.Errorf("stream %s needs exactly one stream NAME", cmd)
	}
	return c.Args().First(), nil
}

// withSession runs call with a client holding a session (the stream.* built-ins go
// through the log) within --timeout, and prints its result in the --output format
// (cliout.Result).
func withSession(c *cli.Context, call func(*client.Client) (any, error)) error {
	format, err := outputFormat(c)
	if err != nil {
		return err
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
	c.Context = ctx
	v, err := call(cl)
	if err != nil {
		return err
	}
	return cliout.Result(c.App.Writer, format, v)
}
