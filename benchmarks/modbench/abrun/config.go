package abrun

import (
	"errors"
	"fmt"
	"time"
)

// ErrBadConfig is a Config that fails Validate.
var ErrBadConfig = errors.New("abrun: bad config")

// Engines of a run.
const (
	// EngineStarlark runs the processor as the Starlark module, deployed through the log
	// on `lockstep node` processes.
	EngineStarlark = "starlark"
	// EngineGo runs it as compiled-in Go code, on modbench-node processes.
	EngineGo = "go"
)

// Limits of a Config.
const (
	// MaxBatch bounds Config.Batch: one AppendBatch must stay well inside the request limit.
	MaxBatch = 10_000
	// MaxRecords bounds Config.Records (the expected result is computed in memory).
	MaxRecords = 50_000_000
)

// Config describes one run.
type Config struct {
	// Engine is EngineStarlark or EngineGo. Required.
	Engine string
	// LockstepBin is the lockstep binary: it makes the certificates and, for Starlark,
	// runs the nodes. Required.
	LockstepBin string
	// GoNodeBin is the modbench-node binary the Go runs' nodes run. Required for EngineGo.
	GoNodeBin string
	// Dir holds the run's certificates and node folders; the caller removes it. Required.
	Dir string
	// Nodes is the cluster size, 1 to 9. Default 1.
	Nodes int
	// Partitions is the cluster's partition count. Default 4.
	Partitions int
	// Records is how many records to append, at most MaxRecords. Default 100,000.
	Records int64
	// MaxAppend bounds the time spent appending: the appends stop at Records or at
	// MaxAppend, whichever comes first. Default 60s.
	MaxAppend time.Duration
	// DrainTimeout bounds the wait, after the last append, for every node to have
	// handled every record. Default 120s.
	DrainTimeout time.Duration
	// Batch is the number of records per AppendBatch, 1 to MaxBatch. Default 500.
	Batch int
	// Workers is the number of concurrent appending clients, 1 to 64. Default 4.
	Workers int
	// Poll is the interval of the lag samples and the drain checks. Default 200ms.
	Poll time.Duration
	// CheckPage is the rows per call of the total procedure when the result is checked:
	// a page must stay well inside the module's step budget (modules.Options.MaxSteps,
	// about 10 steps a row). Default 10,000, at most 50,000.
	CheckPage int
	// ProfileFile, if set, is where a CPU profile of the node (Nodes must be 1) over the
	// appends is written; ProfileSeconds its length (default 10).
	ProfileFile    string
	ProfileSeconds int
}

func (c Config) withDefaults() Config {
	if c.Nodes == 0 {
		c.Nodes = 1
	}
	if c.Partitions == 0 {
		c.Partitions = 4
	}
	if c.Records == 0 {
		c.Records = 100_000
	}
	if c.MaxAppend == 0 {
		c.MaxAppend = 60 * time.Second
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 120 * time.Second
	}
	if c.Batch == 0 {
		c.Batch = 500
	}
	if c.Workers == 0 {
		c.Workers = 4
	}
	if c.Poll == 0 {
		c.Poll = 200 * time.Millisecond
	}
	if c.CheckPage == 0 {
		c.CheckPage = 10_000
	}
	if c.ProfileSeconds == 0 {
		c.ProfileSeconds = 10
	}
	return c
}

// Validate checks c after defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Engine != EngineStarlark && c.Engine != EngineGo:
		return fmt.Errorf("%w: engine %q: want %s or %s", ErrBadConfig, c.Engine, EngineStarlark, EngineGo)
	case c.LockstepBin == "":
		return fmt.Errorf("%w: no lockstep binary", ErrBadConfig)
	case c.Engine == EngineGo && c.GoNodeBin == "":
		return fmt.Errorf("%w: engine go needs the modbench-node binary", ErrBadConfig)
	case c.Dir == "":
		return fmt.Errorf("%w: no directory", ErrBadConfig)
	case c.Nodes < 1 || c.Nodes > 9:
		return fmt.Errorf("%w: %d nodes: want 1 to 9", ErrBadConfig, c.Nodes)
	case c.Partitions < 1:
		return fmt.Errorf("%w: %d partitions: want at least 1", ErrBadConfig, c.Partitions)
	case c.Records < 1 || c.Records > MaxRecords:
		return fmt.Errorf("%w: %d records: want 1 to %d", ErrBadConfig, c.Records, MaxRecords)
	case c.Batch < 1 || c.Batch > MaxBatch:
		return fmt.Errorf("%w: batch %d: want 1 to %d", ErrBadConfig, c.Batch, MaxBatch)
	case c.Workers < 1 || c.Workers > 64:
		return fmt.Errorf("%w: %d workers: want 1 to 64", ErrBadConfig, c.Workers)
	case c.MaxAppend < 0 || c.DrainTimeout < 0 || c.Poll < 0:
		return fmt.Errorf("%w: negative duration", ErrBadConfig)
	case c.CheckPage < 1 || c.CheckPage > 50_000:
		return fmt.Errorf("%w: check page of %d rows: want 1 to 50000", ErrBadConfig, c.CheckPage)
	case c.ProfileFile != "" && c.Nodes != 1:
		return fmt.Errorf("%w: a profile needs 1 node (--pprof is one address for every node), got %d", ErrBadConfig, c.Nodes)
	case c.ProfileSeconds < 1:
		return fmt.Errorf("%w: profile of %d s: want at least 1", ErrBadConfig, c.ProfileSeconds)
	}
	return nil
}
