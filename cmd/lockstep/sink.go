package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/client/pgsink"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/urfave/cli/v2"
)

func sinkCommand() *cli.Command {
	return &cli.Command{
		Name:        "sink",
		Usage:       "copy a stream into an external database",
		Subcommands: []*cli.Command{sinkPostgresCommand(), sinkKafkaCommand()},
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
written once. Each start takes a new epoch of every partition it writes (table
lockstep_sink_epochs); a transaction commits only while its epochs are the current ones,
so an older instance still running (paused, partitioned) writes nothing once a newer one
has taken its partitions, and exits.

Records come from a push subscription to its partitions: a node sends each record as it
applies it, at most --batch records per partition ahead of the sink, and the subscription
moves to another node, without gap or duplicate, when its node is lost.

With --group G, several sink processes share the stream's partitions: each joins the
Lockstep consumer group G (as --member, by default host-pid) and writes only the
partitions the group assigns it; a process that dies or leaves has its partitions taken
by the others (after --group-session-timeout when it died). The offsets stay in
PostgreSQL with the rows; the epochs are per partition, so group members writing
different partitions of one table do not fence each other, and a member that lost a
partition writes nothing more to it once the new owner has taken it.

A record that the stream's retention trimmed before the sink wrote it stops the sink
(--on-trimmed fail, the default: the table cannot hold it any more); --on-trimmed skip
logs the range lost as a warning and goes on from the first record kept.

With --mode append|upsert or --schema FILE.sql the sink is typed: the columns are those of --stream's
CREATE STREAM, CREATE TABLE or CREATE MATERIALIZED VIEW, read from the cluster (or, with
--schema FILE.sql, compiled here from FILE, which holds the statement and, for a view,
those of what it reads); each record is decoded with them and written as
the row's columns into --table, created if it does not exist (bigint, double precision,
text, bytea, boolean, timestamptz, interval). --mode append inserts a row per record (the
default for a stream); --mode upsert keeps one row per key, INSERT ... ON CONFLICT on the
key column (the default for a table and a view). A view's changelog is upserted on the
column lockstep_key (the key of the row in the view's table), its deletes applied, so the
table holds the view's contents. A table of the wrong shape (a column missing or of
another type, no unique key on the upsert key) is refused before anything is written; a
record that does not decode stops the sink, its batch not written.

With --mode and no --schema the sink is typed too, with the schema of --stream read from
the cluster's SQL catalogue (SHOW SCHEMA, the deployed CREATE statement); --schema
overrides it. A stream that SQL did not create is refused (it has no columns), before
anything is written.

The DSN, the connection, the table's columns and the stream are checked before anything
is read or written (or a group joined). Runs until SIGINT or SIGTERM (exit 0); exits 1 when fenced or on
an error it cannot go on from. Logs go to stderr.

--at-least-once commits the offsets in a separate transaction after the rows (every
--offset-commit-interval): a crash in between writes records again. It exists ONLY to
show what the default mode prevents; do not use it for data you care about.

Example:
  psql "$DSN" -c 'CREATE TABLE clicks_sink (stream text NOT NULL, partition integer NOT NULL,
      "offset" bigint NOT NULL, key bytea, value bytea, event_time timestamptz NOT NULL)'
  lockstep sink postgres --stream clicks --table clicks_sink --dsn "$DSN"
  lockstep sink postgres --stream clicks --table clicks_sink --dsn "$DSN" --group clicks-sink   # one of several
  lockstep sink postgres --stream per_page --mode upsert --table per_page --dsn "$DSN"   # typed, schema from the cluster
  lockstep sink postgres --stream per_page --schema views.sql --table per_page --dsn "$DSN"   # typed, schema from a file`,
		Flags: withClientFlags(
			&cli.StringFlag{Name: "stream", Usage: "the stream to copy", Required: true},
			&cli.StringFlag{Name: "dsn", Usage: "PostgreSQL connection string (postgres://user:pass@host:port/db or key=value form)", Required: true, EnvVars: []string{"LOCKSTEP_SINK_DSN"}},
			&cli.StringFlag{Name: "table", Usage: "target table, TABLE or SCHEMA.TABLE; it must exist (created with --schema)", Required: true},
			&cli.StringFlag{Name: "schema", Usage: "a .sql file with the CREATE statement of --stream: write typed columns, not blobs (overrides the schema --mode reads from the cluster)"},
			&cli.StringFlag{Name: "mode", Usage: "write typed columns: append (a row per record) or upsert (a row per key), the schema read from the cluster unless --schema; with --schema, default append for a stream, upsert for a table or view"},
			&cli.BoolFlag{Name: "at-least-once", Usage: "DEMONSTRATION ONLY: commit offsets apart from the rows, so a crash writes duplicates"},
			&cli.DurationFlag{Name: "offset-commit-interval", Usage: "with --at-least-once, how often offsets are committed", Value: time.Second},
			&cli.IntFlag{Name: "batch", Usage: "the credit window per partition: most records a node sends ahead of the sink", Value: 4096},
			&cli.StringFlag{Name: "group", Usage: "share the stream's partitions with the other sinks of this consumer group (same --table)"},
			&cli.StringFlag{Name: "member", Usage: "with --group, this sink's member id (default: host-pid); a restart that keeps it takes its place at once"},
			&cli.DurationFlag{Name: "group-session-timeout", Usage: "with --group, how long the group waits for a dead member's heartbeat before reassigning its partitions", Value: 10 * time.Second},
			&cli.StringFlag{Name: "on-trimmed", Usage: "when retention trimmed records before they were written: fail (stop) or skip (log the range lost, go on)", Value: "fail"},
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
	if c.Int("batch") <= 0 || c.Duration("group-session-timeout") <= 0 {
		return errors.New("--batch and --group-session-timeout must be positive")
	}
	if c.String("member") != "" && c.String("group") == "" {
		return errors.New("--member needs --group")
	}
	onTrimmed := pgsink.TrimmedPolicy(c.String("on-trimmed"))
	if onTrimmed != pgsink.TrimmedFail && onTrimmed != pgsink.TrimmedSkip {
		return fmt.Errorf("--on-trimmed %q: want fail or skip", onTrimmed)
	}
	cl, err := openClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	var rows *pgsink.Rows
	mode := pgsink.Mode(c.String("mode"))
	if file := c.String("schema"); file != "" {
		src, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("--schema: %w", err)
		}
		art, err := sql.Compile(string(src), sql.Options{})
		if err != nil {
			return fmt.Errorf("--schema %s: %w", file, err)
		}
		if rows, err = pgsink.RowsFor(art.Schemas(), c.String("stream"), mode); err != nil {
			return fmt.Errorf("--schema %s: %w", file, err)
		}
	} else if mode != "" {
		ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
		rows, err = pgsink.CatalogRows(ctx, cl, c.String("stream"), mode)
		cancel()
		if err != nil {
			return fmt.Errorf("sink postgres: %w", err)
		}
	}
	cfg := pgsink.Config{
		Rows:                 rows,
		DSN:                  c.String("dsn"),
		Table:                c.String("table"),
		Stream:               c.String("stream"),
		AtLeastOnce:          c.Bool("at-least-once"),
		OffsetCommitInterval: c.Duration("offset-commit-interval"),
		Group:                c.String("group"),
		Member:               c.String("member"),
		GroupSessionTimeout:  c.Duration("group-session-timeout"),
		OnTrimmed:            onTrimmed,
		Logger:               log,
	}
	origin := &pgsink.SubscribeOrigin{Client: cl, Options: []client.SubscribeOption{client.WithCredit(c.Int("batch"), 0)}}

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
	records, txs, skipped := s.Stats()
	log.Info("sink stopped", "records", records, "transactions", txs, "skipped", skipped)
	return nil
}
