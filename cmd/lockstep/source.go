package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lockstepdb/lockstep/client/kafka"
	"github.com/lockstepdb/lockstep/client/profile"
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/urfave/cli/v2"
)

func sourceCommand() *cli.Command {
	return &cli.Command{
		Name:        "source",
		Usage:       "bring records of an external log into a stream (Kafka), exactly once",
		Subcommands: []*cli.Command{sourceKafkaCommand(), sourceStatusCommand()},
	}
}

func sourceKafkaCommand() *cli.Command {
	return &cli.Command{
		Name:  "kafka",
		Usage: "run a worker of a Kafka source until interrupted",
		Description: `Joins the Lockstep consumer group --name (as --member, by default host-pid), reads
the Kafka partitions of --topic the group assigns it (read-committed), from the offsets
stored in Lockstep, and appends each batch to --stream together with the Kafka offset
after it in one exactly-once step (the source.append built-in). Run several workers with
one --name to share the partitions; a worker that was replaced (paused, then resumed)
is refused and appends nothing. Records --format json cannot decode go to
--dead-letter with the reason. See docs/sources.md.

Runs until SIGINT or SIGTERM (exit 0); exits 1 on an error it cannot go on from.

Example:
  lockstep stream create clicks && lockstep stream create clicks.dead
  lockstep source kafka --brokers k1:9092 --topic clicks --name clicks-in --stream clicks --format json`,
		Flags: withClientFlags(
			&cli.StringFlag{Name: "brokers", Usage: "Kafka seed brokers, host:port,...", Required: true},
			&cli.StringFlag{Name: "topic", Usage: "the Kafka topic", Required: true},
			&cli.StringFlag{Name: "name", Usage: "the source's name (its consumer group)", Required: true},
			&cli.StringFlag{Name: "stream", Usage: "the stream records are appended to", Required: true},
			&cli.StringFlag{Name: "dead-letter", Usage: "the stream of malformed records (default STREAM.dead)"},
			&cli.StringFlag{Name: "member", Usage: "this worker's member id (default host-pid)"},
			&cli.StringFlag{Name: "format", Usage: "raw or json (a JSON object, stored as a msgpack map)", Value: "raw"},
			&cli.IntFlag{Name: "batch", Usage: "most records per exactly-once step", Value: kafka.DefaultSourceConfig().BatchRecords},
			&cli.DurationFlag{Name: "session-timeout", Usage: "how long the group waits for a dead worker's heartbeat", Value: kafka.DefaultSourceConfig().SessionTimeout},
			&cli.StringFlag{Name: "log-format", Usage: "text or json", Value: "text"},
			&cli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error", Value: "info"},
		),
		Action: runSourceKafka,
	}
}

func defaultMember() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

func runSourceKafka(c *cli.Context) error {
	log, err := newLogger(c.String("log-format"), c.String("log-level"))
	if err != nil {
		return err
	}
	cfg := kafka.DefaultSourceConfig()
	cfg.Brokers, cfg.Topic, cfg.Name, cfg.Stream = profile.SplitAddrs(c.String("brokers")), c.String("topic"), c.String("name"), c.String("stream")
	cfg.DeadLetter, cfg.Member, cfg.Format = c.String("dead-letter"), c.String("member"), kafka.Format(c.String("format"))
	cfg.BatchRecords, cfg.SessionTimeout, cfg.Logger = c.Int("batch"), c.Duration("session-timeout"), log
	cfg.Timeout = timeoutOr(c.Duration("timeout"), cfg.Timeout)
	if cfg.Member == "" {
		cfg.Member = defaultMember()
	}
	if err := cfg.Validate(); err != nil { // before any connection
		return fmt.Errorf("source kafka: %w", err)
	}
	cl, err := openClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	src, err := kafka.NewSource(cl, cfg)
	if err != nil {
		return fmt.Errorf("source kafka: %w", err)
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := src.Run(ctx); err != nil {
		return fmt.Errorf("source kafka: %w", err)
	}
	log.Info("source stopped", "partitions", src.Status())
	return nil
}

func sourceStatusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show a Kafka source's stored offsets and lag per partition",
		Description: `For every partition of --topic: the Kafka offset stored in Lockstep (the next record
to bring in), the partition's last stable offset in Kafka, and the lag between them.
Needs no running worker.

Example:
  lockstep source status --brokers k1:9092 --topic clicks --name clicks-in`,
		Flags: withClientFlags(
			&cli.StringFlag{Name: "brokers", Usage: "Kafka seed brokers, host:port,...", Required: true},
			&cli.StringFlag{Name: "topic", Usage: "the Kafka topic", Required: true},
			&cli.StringFlag{Name: "name", Usage: "the source's name", Required: true},
			outputFlag(outputTable),
		),
		Action: runSourceStatus,
	}
}

func runSourceStatus(c *cli.Context) error {
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	cl, err := openClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	lags, err := kafka.SourceStatus(ctx, cl, profile.SplitAddrs(c.String("brokers")), c.String("name"), c.String("topic"), c.Duration("timeout"))
	if err != nil {
		return fmt.Errorf("source status: %w", err)
	}
	return cliout.SourceLags(c.App.Writer, format, lags)
}

// timeoutOr returns d, or def when d is not positive.
func timeoutOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
