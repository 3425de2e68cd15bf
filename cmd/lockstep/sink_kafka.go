package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/lockstepdb/lockstep/client/kafka"
	"github.com/lockstepdb/lockstep/client/profile"
	"github.com/urfave/cli/v2"
)

func sinkKafkaCommand() *cli.Command {
	return &cli.Command{
		Name:  "kafka",
		Usage: "copy every record of a stream into a Kafka topic exactly once, until interrupted",
		Description: `Writes stream partition p of --stream to Kafka partition p mod N of --topic, in
Kafka transactions under the transactional id NAME-p. Each transaction also writes the
Lockstep offset after its records to partition p of --progress-topic (default
TOPIC.progress; it must exist, serve this sink alone, and have at least as many
partitions as the stream). A (re)started sink first takes the transactional ids, which
fences any older instance and aborts its open transaction, then resumes each partition
from its last committed progress record: read with read-committed isolation, the topic
holds each record exactly once. Records carry the headers lockstep-stream,
lockstep-partition and lockstep-offset. See docs/sinks.md.

Runs until SIGINT or SIGTERM (exit 0); exits 1 when fenced or on an error it cannot go on
from.

Example:
  lockstep sink kafka --stream clicks --brokers k1:9092 --topic clicks-out --name clicks-out`,
		Flags: withClientFlags(
			&cli.StringFlag{Name: "stream", Usage: "the stream to copy", Required: true},
			&cli.StringFlag{Name: "brokers", Usage: "Kafka seed brokers, host:port,...", Required: true},
			&cli.StringFlag{Name: "topic", Usage: "the Kafka topic written; it must exist", Required: true},
			&cli.StringFlag{Name: "name", Usage: "the sink's name: transactional ids NAME-p", Required: true},
			&cli.StringFlag{Name: "progress-topic", Usage: "the topic of the sink's progress records (default TOPIC.progress)"},
			&cli.StringFlag{Name: "partitions", Usage: "the stream partitions this instance copies, p,p,... (default all)"},
			&cli.IntFlag{Name: "batch", Usage: "most records per Kafka transaction", Value: kafka.DefaultSinkConfig().BatchRecords},
			&cli.DurationFlag{Name: "transaction-timeout", Usage: "Kafka transaction timeout", Value: kafka.DefaultSinkConfig().TransactionTimeout},
			&cli.StringFlag{Name: "log-format", Usage: "text or json", Value: "text"},
			&cli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error", Value: "info"},
		),
		Action: runSinkKafka,
	}
}

func runSinkKafka(c *cli.Context) error {
	log, err := newLogger(c.String("log-format"), c.String("log-level"))
	if err != nil {
		return err
	}
	cfg := kafka.DefaultSinkConfig()
	for _, p := range strings.Split(c.String("partitions"), ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return fmt.Errorf("--partitions %q: %w", c.String("partitions"), err)
		}
		cfg.Partitions = append(cfg.Partitions, n)
	}
	cfg.Brokers, cfg.Stream, cfg.Topic, cfg.Name = profile.SplitAddrs(c.String("brokers")), c.String("stream"), c.String("topic"), c.String("name")
	cfg.ProgressTopic, cfg.BatchRecords, cfg.TransactionTimeout = c.String("progress-topic"), c.Int("batch"), c.Duration("transaction-timeout")
	cfg.Timeout, cfg.Logger = timeoutOr(c.Duration("timeout"), cfg.Timeout), log
	if err := cfg.Validate(); err != nil { // before any connection
		return fmt.Errorf("sink kafka: %w", err)
	}
	cl, err := openClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	s, err := kafka.NewSink(cl, cfg)
	if err != nil {
		return fmt.Errorf("sink kafka: %w", err)
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := s.Run(ctx); err != nil {
		return fmt.Errorf("sink kafka: %w", err)
	}
	log.Info("sink stopped")
	return nil
}
