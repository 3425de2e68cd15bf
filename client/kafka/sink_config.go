package kafka

import (
	"log/slog"
	"time"
)

// SinkConfig configures a Sink. Zero values get the defaults of DefaultSinkConfig.
type SinkConfig struct {
	// Brokers are the Kafka seed brokers, host:port. Required.
	Brokers []string
	// Stream is the Lockstep stream copied. Required.
	Stream string
	// Topic is the Kafka topic written; it must exist. Stream partition p goes to Kafka
	// partition p mod (its partitions), in offset order. Required.
	Topic string
	// Name names the sink: stream partition p is written under the transactional id
	// "<Name>-<p>", and its progress records carry the key "<Name>/<Stream>/<p>".
	// Required.
	Name string
	// ProgressTopic receives, in each transaction, the Lockstep offset after the
	// transaction's records; it must exist, belong to this sink alone, and have at least
	// as many partitions as the stream (stream partition p's progress is in its
	// partition p). Default Topic + ".progress".
	ProgressTopic string
	// Partitions are the stream partitions this instance copies; empty means all. Two
	// instances may run on disjoint sets; on one partition, the newer fences the older.
	Partitions []int
	// BatchRecords is the most records one Kafka transaction carries. Default 1000.
	BatchRecords int
	// TransactionTimeout is the Kafka transaction timeout: a paused instance's open
	// transaction is aborted by the broker after it. Default 20 s.
	TransactionTimeout time.Duration
	// Timeout bounds each call to Kafka at start (metadata, progress). Default 10 s.
	Timeout time.Duration
	// Logger receives the sink's events. Default slog.Default().
	Logger *slog.Logger

	// afterCommit, for tests only (export_test.go), runs after each transaction
	// committed; beforeCommit before each transaction ends (a test pauses a zombie there);
	// afterInit after a producer took the transactional id, before it reads the progress.
	afterCommit  func(partition int, next uint64)
	beforeCommit func(partition int)
	afterInit    func(partition int)
}

// DefaultSinkConfig returns a SinkConfig with every default set and the required fields
// empty.
func DefaultSinkConfig() SinkConfig {
	return SinkConfig{BatchRecords: 1000, TransactionTimeout: 20 * time.Second, Timeout: 10 * time.Second}
}

func (c SinkConfig) withDefaults() (SinkConfig, error) {
	d := DefaultSinkConfig()
	if c.ProgressTopic == "" && c.Topic != "" {
		c.ProgressTopic = c.Topic + ".progress"
	}
	if c.BatchRecords == 0 {
		c.BatchRecords = d.BatchRecords
	}
	if c.TransactionTimeout == 0 {
		c.TransactionTimeout = d.TransactionTimeout
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
func (c SinkConfig) Validate() error {
	switch {
	case len(c.Brokers) == 0:
		return configErr("no brokers")
	case c.Stream == "":
		return configErr("no stream")
	case c.Topic == "":
		return configErr("no topic")
	case c.Name == "":
		return configErr("no sink name")
	case c.ProgressTopic == c.Topic:
		return configErr("the progress topic is the data topic %q", c.Topic)
	case c.BatchRecords < 1:
		return configErr("batch of %d records", c.BatchRecords)
	case c.TransactionTimeout < time.Second:
		return configErr("transaction timeout %v (at least 1 s)", c.TransactionTimeout)
	case c.Timeout <= 0:
		return configErr("timeout %v", c.Timeout)
	}
	for _, p := range c.Partitions {
		if p < 0 {
			return configErr("stream partition %d", p)
		}
	}
	return nil
}
