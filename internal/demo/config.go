package demo

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

var (
	// ErrBadConfig is returned for an invalid Config or PipelineConfig.
	ErrBadConfig = errors.New("demo: bad config")
	// ErrCheckFailed is returned when the exactly-once check at the end of a run finds a
	// difference: a vote or click lost or counted twice, or replicas that differ.
	ErrCheckFailed = errors.New("demo: exactly-once check FAILED")
)

// Config configures a demo run. Start from DefaultConfig.
type Config struct {
	// Nodes is the cluster size, at least 1. Default 3.
	Nodes int
	// Partitions is the partition count, at least 1. Default 4.
	Partitions int
	// Clients is how many clients drive the workload, each with one request outstanding
	// (a vote, or a batch of clicks). At least 1. Default 64.
	Clients int
	// Duration is how long the workload runs, positive. Default 20 s.
	Duration time.Duration
	// Kill, with more than one node, kills the leader halfway through and restarts it
	// after the workload ends. Default true.
	Kill bool
}

// DefaultConfig returns the demo's defaults: 3 nodes, 4 partitions, 64 clients, 20 s,
// the leader killed halfway.
func DefaultConfig() Config {
	return Config{Nodes: 3, Partitions: 4, Clients: 64, Duration: 20 * time.Second, Kill: true}
}

// Validate checks c.
func (c Config) Validate() error {
	switch {
	case c.Nodes < 1:
		return fmt.Errorf("%w: nodes %d: want at least 1", ErrBadConfig, c.Nodes)
	case c.Partitions < 1:
		return fmt.Errorf("%w: partitions %d: want at least 1", ErrBadConfig, c.Partitions)
	case c.Clients < 1:
		return fmt.Errorf("%w: clients %d: want at least 1", ErrBadConfig, c.Clients)
	case c.Duration <= 0:
		return fmt.Errorf("%w: duration %v: want a positive duration", ErrBadConfig, c.Duration)
	}
	return nil
}

// PipelineConfig configures a run of the click pipeline demo. Start from
// DefaultPipelineConfig.
type PipelineConfig struct {
	Config
	// SinkDSN, when set, is a PostgreSQL database into which the exactly-once sink
	// (client/pgsink) copies the window results; the table is checked at the end.
	// Default empty: no sink.
	SinkDSN string
	// SinkSchema is the schema, owned by the demo (dropped and created again), of the
	// sink's table page_counts. A name without a dot. Default "lockstep_demo".
	SinkSchema string
}

// DefaultPipelineConfig returns DefaultConfig without a sink.
func DefaultPipelineConfig() PipelineConfig {
	return PipelineConfig{Config: DefaultConfig(), SinkSchema: "lockstep_demo"}
}

// Validate checks c.
func (c PipelineConfig) Validate() error {
	if err := c.Config.Validate(); err != nil {
		return err
	}
	if c.SinkDSN != "" && (c.SinkSchema == "" || strings.Contains(c.SinkSchema, ".")) {
		return fmt.Errorf("%w: sink schema %q: want a schema name without a dot", ErrBadConfig, c.SinkSchema)
	}
	return nil
}
