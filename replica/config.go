package replica

import (
	"fmt"
	"time"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/modules"
)

// Config configures an FSM. Zero fields take their defaults.
type Config struct {
	// Partitions is this node's partition count; it must equal the cluster's.
	// Default partition.DefaultPartitions.
	Partitions int
	// SessionTTL is how long, in batch time, a session lives without requests. Default 2m.
	SessionTTL time.Duration
	// SessionWindow is how many unacknowledged results one session may have cached; a
	// request further ahead fails with ErrSessionWindow. Default 4096.
	SessionWindow uint64
	// MaxCachedResultBytes bounds, in bytes, the results one session keeps cached above
	// its AckThrough (a result counts its value and error message). A new request of a
	// session whose cache holds this much or more is refused with ErrSessionCacheFull (wire
	// code Overloaded) before it runs; a retry carrying a later AckThrough frees the cache
	// and gets in. The check counts the results of the session's requests in earlier log
	// entries (and earlier in the same entry, before a hash check): a position in the log,
	// so every replica decides alike, and the cache may pass the bound by the results of
	// one entry's requests. A client that waits for each result holds about none; the Go
	// client, pipelining at its default MaxInflight of 1024, reaches the default bound only
	// if its results average over 16 KiB. Default 16 MiB.
	MaxCachedResultBytes int
	// MaxSessions bounds the number of open sessions. Default 100000.
	MaxSessions int
	// HashHistory is how many hash-check records the FSM keeps for comparison. Default 64.
	HashHistory int
	// Observer receives the counts of every apply, for metrics. Default nil: none.
	Observer ApplyObserver
	// Sequential runs all partitions on the applying goroutine (see partition.Config).
	Sequential bool
	// MaxResultBytes is the longest encoded result an input may return, in bytes (see
	// partition.Config.MaxResultBytes). Default partition.DefaultMaxResultBytes.
	//
	// This and the session and processor settings above and below (SessionTTL,
	// SessionWindow, MaxCachedResultBytes, MaxSessions, ProcessorBudget,
	// ProcessorBudgetPerAppend) decide replicated results: they are the initial values of
	// the replicated ClusterConfig, which the node proposes if it creates the cluster. The
	// FSM applies with the cluster's values as soon as the log sets them (clusterconfig.go).
	MaxResultBytes int
	// ProcessorBudget is the most records each processor handles per partition per log
	// entry; the rest waits for the next entry (a tick, if no input comes). Default
	// partition.DefaultProcessorBudget. It decides where work falls in the log: replicated
	// (see MaxResultBytes).
	ProcessorBudget int
	// ProcessorBudgetPerAppend adds, to an entry's ProcessorBudget, this many records for
	// every stream record the entry's inputs appended (partition.ProcessorPhase
	// BudgetPerAppend), so processors keep up with entries of thousands of records; a
	// backlog alone never raises the budget. Default 1; negative turns the scaling off.
	// Replicated, like ProcessorBudget.
	ProcessorBudgetPerAppend int
	// MaxClusterVersion is the highest cluster version this node runs (versions.go); 0
	// means MaxClusterVersion, the binary's own. Lower only to run as an older binary would
	// (tests of rolling upgrades).
	MaxClusterVersion uint64
	// Compilers compile deployed modules, by kind (modules.go). Default DefaultCompilers().
	// What a compiler makes of a source decides replicated results: every node of a
	// cluster must compile a kind alike (the interpreter is pinned by go.mod and the
	// cluster version admits the kind).
	Compilers map[string]Compiler
	// ModuleLimits are the initial module budgets (MaxSteps, MaxElements, MaxValueBytes,
	// MaxIntBits; the other fields are ignored) of a cluster this node creates at cluster
	// version 4 or later: replicated settings, like MaxResultBytes. Zero fields take
	// modules' defaults.
	ModuleLimits modules.Options
}

// DefaultProcessorBudgetPerAppend is Config.ProcessorBudgetPerAppend's default.
const DefaultProcessorBudgetPerAppend = 1

// DefaultConfig returns a Config with every field at its default.
func DefaultConfig() Config {
	return Config{
		Partitions:               partition.DefaultPartitions,
		SessionTTL:               2 * time.Minute,
		SessionWindow:            4096,
		MaxCachedResultBytes:     16 << 20,
		MaxSessions:              100000,
		HashHistory:              64,
		MaxResultBytes:           partition.DefaultMaxResultBytes,
		ProcessorBudget:          partition.DefaultProcessorBudget,
		ProcessorBudgetPerAppend: DefaultProcessorBudgetPerAppend,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Compilers == nil {
		c.Compilers = DefaultCompilers()
	}
	if c.Partitions == 0 {
		c.Partitions = d.Partitions
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = d.SessionTTL
	}
	if c.SessionWindow == 0 {
		c.SessionWindow = d.SessionWindow
	}
	if c.MaxCachedResultBytes == 0 {
		c.MaxCachedResultBytes = d.MaxCachedResultBytes
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = d.MaxSessions
	}
	if c.HashHistory == 0 {
		c.HashHistory = d.HashHistory
	}
	if c.ProcessorBudget == 0 {
		c.ProcessorBudget = d.ProcessorBudget
	}
	if c.MaxResultBytes == 0 {
		c.MaxResultBytes = d.MaxResultBytes
	}
	if c.ProcessorBudgetPerAppend == 0 {
		c.ProcessorBudgetPerAppend = DefaultProcessorBudgetPerAppend
	}
	if c.MaxClusterVersion == 0 {
		c.MaxClusterVersion = MaxClusterVersion
	}
	return c
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Partitions < 1 || c.Partitions > partition.MaxPartitions:
		return fmt.Errorf("%w: partitions %d not in 1..%d", partition.ErrBadConfig, c.Partitions, partition.MaxPartitions)
	case c.SessionTTL < time.Second:
		return fmt.Errorf("%w: session TTL %v below 1s", partition.ErrBadConfig, c.SessionTTL)
	case c.MaxCachedResultBytes < 0:
		return fmt.Errorf("%w: MaxCachedResultBytes %d is negative", partition.ErrBadConfig, c.MaxCachedResultBytes)
	case c.MaxSessions < 1 || c.HashHistory < 1:
		return fmt.Errorf("%w: MaxSessions and HashHistory must be positive", partition.ErrBadConfig)
	case c.ProcessorBudget < 1:
		return fmt.Errorf("%w: ProcessorBudget %d must be positive", partition.ErrBadConfig, c.ProcessorBudget)
	case c.ProcessorBudgetPerAppend > partition.MaxProcessorBudget:
		return fmt.Errorf("%w: ProcessorBudgetPerAppend %d over %d", partition.ErrBadConfig, c.ProcessorBudgetPerAppend, partition.MaxProcessorBudget)
	case c.MaxClusterVersion < MinClusterVersion || c.MaxClusterVersion > MaxClusterVersion:
		return fmt.Errorf("%w: MaxClusterVersion %d not in %d..%d", partition.ErrBadConfig, c.MaxClusterVersion, MinClusterVersion, MaxClusterVersion)
	}
	if err := checkModuleLimits(moduleLimitsOf(c.ModuleLimits)); err != nil {
		return fmt.Errorf("%w: ModuleLimits: %w", partition.ErrBadConfig, err)
	}
	return nil
}
