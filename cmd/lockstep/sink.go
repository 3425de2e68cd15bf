package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lockstepdb/lockstep/client/pgsink"
	"github.com/urfave/cli/v2"
)

func sinkCommand() *cli.Command {
	return &cli.Command{
		Name:        "sink",
		Usage:       "copy a stream into an external database",
		Subcommands: []*cli.Command{sinkPostgresCommand()},
	}
}

func sinkPostgresCommand() *cli.Command {
	return &cli.Command{
		Name:  "postgres",
		Usage: "copy every record of a stream into a PostgreSQL table exactly once, until interrupted",
		Description: `Reads every partition of --stream and writes each record as a row of --table
(stream, partition, offset, key, value, event_time; see docs/sinks.md for the table to
create). Each batch is one PostgreSQL transaction holding the rows and, per partition,
the offset to resume from (table lockstep_sink_offsets, created beside --table): after a
crash, a restart resumes where the last committed transaction ended, so every record is
written once. Each start takes a new epoch (table lockstep_sink_epochs); a transaction
commits only while its epoch is the current one, so an older instance still running
(paused, partitioned) writes nothing once a newer one has started, and exits.

The DSN, the connection, the table's columns and the stream are checked before anything
is read or written. Runs until SIGINT or SIGTERM (exit 0); exits 1 when fenced or on
an error it cannot go on from. Logs go to stderr.

--at-least-once commits the offsets in a separate transaction after the rows (every
--offset-commit-interval): a crash in between writes records again. It exists ONLY to
show what the default mode prevents; do not use it for data you care about.

Example:
  psql "$DSN" -c 'CREATE TABLE clicks_sink (stream text NOT NULL, partition integer NOT NULL,
      "offset" bigint NOT NULL, key bytea, value bytea, event_time timestamptz NOT NULL)'
  lockstep sink postgres --stream clicks --table clicks_sink --dsn "$DSN"`,
		Flags: withClientFlags(
			&cli.StringFlag{Name: "stream", Usage: "the stream to copy", Required: true},
			&cli.StringFlag{Name: "dsn", Usage: "PostgreSQL connection string (postgres://user:pass@host:port/db or key=value form)", Required: true, EnvVars: []string{"LOCKSTEP_SINK_DSN"}},
			&cli.StringFlag{Name: "table", Usage: "target table, TABLE or SCHEMA.TABLE; it must exist", Required: true},
			&cli.BoolFlag{Name: "at-least-once", Usage: "DEMONSTRATION ONLY: commit offsets apart from the rows, so a crash writes duplicates"},
			&cli.DurationFlag{Name: "offset-commit-interval", Usage: "with --at-least-once, how often offsets are committed", Value: time.Second},
			&cli.DurationFlag{Name: "poll", Usage: "pause before reading a partition again that had no new records", Value: 20 * time.Millisecond},
			&cli.IntFlag{Name: "batch", Usage: "most records read from one partition at once", Value: 4096},
			&cli.StringFlag{Name: "log-format", Usage: "text or json", Value: "text"},
			&cli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error", Value: "info"},
		),
		Action: runSinkPostgres,
	}
}

func runSinkPostgres(c *cli.Context) error {
	log, err := newLogger(c.String("log-format"), c.String("log-level"))
	if err != nil {
		return err
	}
	if c.Duration("poll") <= 0 || c.Int("batch") <= 0 {
		return errors.New("--poll and --batch must be positive")
	}
	cl, err := openClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	cfg := pgsink.Config{
		DSN:                  c.String("dsn"),
		Table:                c.String("table"),
		Stream:               c.String("stream"),
		AtLeastOnce:          c.Bool("at-least-once"),
		OffsetCommitInterval: c.Duration("offset-commit-interval"),
		Logger:               log,
	}
	origin := &pgsink.PollOrigin{Client: cl, Poll: c.Duration("poll"), Batch: c.Int("batch")}

	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, c.Duration("timeout"))
	s, err := pgsink.Open(startCtx, cfg, origin)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("sink postgres: %w", err)
	}
	defer s.Close()
	if err := s.Run(ctx); err != nil {
		return fmt.Errorf("sink postgres: %w", err)
	}
	records, txs := s.Stats()
	log.Info("sink stopped", "records", records, "transactions", txs)
	return nil
}
