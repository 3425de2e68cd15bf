package kafka

import (
	"log/slog"
	"strings"
	"time"
)

// SourceConfig configures a Source. Zero values get the defaults of
// DefaultSourceConfig.
type SourceConfig struct {
	// Brokers are the Kafka seed brokers, host:port. Required.
	Brokers []string
	// Topic is the Kafka topic read. Required.
	Topic string
	// Name names the source: it is the Lockstep consumer group whose members share the
	// topic's partitions, and the partition key of the source's state and records (every
	// record of the source lands on the group's home partition). Required.
	Name string
	// Stream is the Lockstep stream the records are appended to; it must exist. Required.
	Stream string
	// DeadLetter is the Lockstep stream malformed records go to (a DeadLetter each); it
	// must exist. Default Stream + ".dead".
	DeadLetter string
	// Member is this worker's member id in the group. Two workers with one id are one
	// member: the later one fences the earlier (a restarted worker whose predecessor is
	// paused). Required.
	Member string
	// Format decodes the values. Default FormatRaw.
	Format Format
	// Decoder, if set, replaces Format: it turns each record into the Lockstep record's
	// key, value and event time, or refuses it (the error is the dead letter's reason).
	// A source into a stream with a SQL schema decodes into its columns with one
	// (plan.Ingest). Default nil.
	Decoder Decoder
	// BatchRecords is the most records one source.append carries. Default 2000.
	BatchRecords int
	// BatchBytes bounds the bytes of keys and values one source.append carries. Default
	// 512 KiB, at most 768 KiB (a request's arguments are at most 1 MiB).
	BatchBytes int
	// SessionTimeout is the group session timeout: a worker that stops heartbeating for
	// this long loses its partitions. Default 10 s.
	SessionTimeout time.Duration
	// Timeout bounds each call to Kafka at start (metadata). Default 10 s.
	Timeout time.Duration
	// Logger receives the worker's events. Default slog.Default().
	Logger *slog.Logger

	// afterAppend, for tests only (export_test.go), runs after each batch's exactly-once
	// step returned, before the worker goes on: a test kills the worker there.
	afterAppend func(partition int32, next int64)
	// beforeAppend, for tests only, runs before each batch is invoked: a test pauses a
	// worker there, to make it a zombie.
	beforeAppend func(partition int32)
}

// DefaultSourceConfig returns a SourceConfig with every default set and the required
// fields empty.
func DefaultSourceConfig() SourceConfig {
	return SourceConfig{Format: FormatRaw, BatchRecords: 2000, BatchBytes: 512 << 10,
		SessionTimeout: 10 * time.Second, Timeout: 10 * time.Second}
}

// withDefaults fills the zero fields and checks the result.
func (c SourceConfig) withDefaults() (SourceConfig, error) {
	d := DefaultSourceConfig()
	if c.DeadLetter == "" && c.Stream != "" {
		c.DeadLetter = c.Stream + ".dead"
	}
	if c.Format == "" {
		c.Format = d.Format
	}
	if c.BatchRecords == 0 {
		c.BatchRecords = d.BatchRecords
	}
	if c.BatchBytes == 0 {
		c.BatchBytes = d.BatchBytes
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = d.SessionTimeout
	}
	if c.Timeout == 0 {
		c.Timeout = d.Timeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, c.Validate()
}

// Validate checks the configuration (after defaults), with an error wrapping ErrConfig.
func (c SourceConfig) Validate() error {
	switch {
	case len(c.Brokers) == 0 || strings.TrimSpace(strings.Join(c.Brokers, "")) == "":
		return configErr("no brokers")
	case c.Topic == "":
		return configErr("no topic")
	case c.Name == "":
		return configErr("no source name")
	case c.Stream == "":
		return configErr("no stream")
	case c.Member == "":
		return configErr("no member id")
	case c.Format != FormatRaw && c.Format != FormatJSON && c.Format != FormatMsgpack:
		return configErr("format %q (raw, json or msgpack)", c.Format)
	case c.BatchRecords < 1:
		return configErr("batch of %d records", c.BatchRecords)
	case c.BatchBytes < 1 || c.BatchBytes > 768<<10:
		return configErr("batch of %d bytes (1 to %d)", c.BatchBytes, 768<<10)
	case c.SessionTimeout < time.Millisecond:
		return configErr("session timeout %v", c.SessionTimeout)
	case c.Timeout <= 0:
		return configErr("timeout %v", c.Timeout)
	}
	return nil
}
