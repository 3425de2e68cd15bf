package partition

import (
	"errors"
	"fmt"
)

// MaxPartitions is the largest partition count an engine accepts.
const MaxPartitions = 1024

// DefaultPartitions is the partition count used when Config.Partitions is zero.
const DefaultPartitions = 4

// ErrBadConfig is returned by Config.Validate and NewEngine for an invalid configuration.
var ErrBadConfig = errors.New("partition: bad config")

// Config configures an Engine.
type Config struct {
	// Partitions is the number of partitions, 1 to MaxPartitions. Default DefaultPartitions.
	// It is fixed for the life of a cluster: PartitionOf depends on it.
	Partitions int
	// ReplicatedTables names the tables whose contents are the same in every partition:
	// written only by inputs that reach all partitions, read locally by any input.
	ReplicatedTables []string
	// Sequential runs every input on the goroutine that calls Execute instead of one
	// worker goroutine per partition. Results and state are identical either way.
	Sequential bool
	// MaxResultBytes is the longest encoded result an input or a Query may return, in
	// bytes, 1 to MaxResultBytesLimit. Default DefaultMaxResultBytes. An input whose result
	// is longer fails with ErrResultTooLarge and its effects are undone. Results are part of
	// replicated state (the session cache), so every replica of a cluster must use the
	// same limit.
	MaxResultBytes int
	// Changelogs maps a table to the stream it publishes its changes to: every Put of the
	// table, and every Delete of an existing row, appends a record to that stream of the
	// same partition in the same Tx (see DecodeChange for the records). Tables must be
	// ordinary (not replicated, not sys.*) and each stream is the changelog of one table.
	// The streams are created like any other; a write to a publishing table fails with
	// ErrUnknownStream while its stream does not exist. Every replica of a cluster must
	// have the same map.
	Changelogs map[string]string
	// Processors are the stream processors RunProcessors runs, in name order whatever
	// their order here; names unique. Every replica of a cluster must have the same set.
	Processors []Processor
}

// DefaultConfig returns a Config with every field at its default.
func DefaultConfig() Config {
	return Config{Partitions: DefaultPartitions, MaxResultBytes: DefaultMaxResultBytes}
}

// withDefaults fills zero fields with their defaults.
func (c Config) withDefaults() Config {
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.MaxResultBytes == 0 {
		c.MaxResultBytes = DefaultMaxResultBytes
	}
	return c
}

// Validate reports the first invalid field, wrapped around ErrBadConfig.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.Partitions < 1 || c.Partitions > MaxPartitions {
		return fmt.Errorf("%w: partitions %d not in 1..%d", ErrBadConfig, c.Partitions, MaxPartitions)
	}
	if c.MaxResultBytes < 1 || c.MaxResultBytes > MaxResultBytesLimit {
		return fmt.Errorf("%w: max result bytes %d not in 1..%d", ErrBadConfig, c.MaxResultBytes, MaxResultBytesLimit)
	}
	if err := ValidateProcessors(c.Processors); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, name := range c.ReplicatedTables {
		if err := checkName(name); err != nil {
			return fmt.Errorf("%w: replicated table %q: %w", ErrBadConfig, name, err)
		}
		if seen[name] {
			return fmt.Errorf("%w: replicated table %q named twice", ErrBadConfig, name)
		}
		seen[name] = true
	}
	return checkChangelogs(c.Changelogs, c.ReplicatedTables)
}
