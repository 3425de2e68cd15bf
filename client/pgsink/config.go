package pgsink

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Config configures a Sink.
type Config struct {
	// DSN is the PostgreSQL connection string (URL or key=value form). Required.
	DSN string
	// Table is the target table, "table" (resolved by the DSN's search_path) or
	// "schema.table". It must exist with the columns of TableSchema. Required.
	Table string
	// Stream is the Lockstep stream copied into Table. Required.
	Stream string
	// AtLeastOnce stores the offsets outside the rows' transaction, in a separate
	// transaction every OffsetCommitInterval: a crash between the two writes the same
	// records again. It exists only to show what the exactly-once mode prevents.
	AtLeastOnce bool
	// OffsetCommitInterval is how often the at-least-once mode commits its offsets.
	// Default 1s; unused in the exactly-once mode.
	OffsetCommitInterval time.Duration
	// IdleInTransactionTimeout is set as the session's idle_in_transaction_session_timeout,
	// so a paused sink (SIGSTOP) holding a transaction open is cut off by the server and
	// cannot block a newer instance for longer. Default 10s.
	IdleInTransactionTimeout time.Duration
	// Logger receives the sink's logs. Default: slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns a Config with the defaults filled in and the required fields
// empty.
func DefaultConfig() Config {
	return Config{
		OffsetCommitInterval:     time.Second,
		IdleInTransactionTimeout: 10 * time.Second,
	}
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.OffsetCommitInterval == 0 {
		c.OffsetCommitInterval = d.OffsetCommitInterval
	}
	if c.IdleInTransactionTimeout == 0 {
		c.IdleInTransactionTimeout = d.IdleInTransactionTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate checks c, zero values standing for the defaults. Errors match ErrBadConfig.
func (c Config) Validate() error {
	switch {
	case c.DSN == "":
		return fmt.Errorf("%w: DSN is empty", ErrBadConfig)
	case c.Table == "":
		return fmt.Errorf("%w: Table is empty", ErrBadConfig)
	case c.Stream == "":
		return fmt.Errorf("%w: Stream is empty", ErrBadConfig)
	case c.OffsetCommitInterval < 0:
		return fmt.Errorf("%w: OffsetCommitInterval %v is negative", ErrBadConfig, c.OffsetCommitInterval)
	case c.IdleInTransactionTimeout < 0:
		return fmt.Errorf("%w: IdleInTransactionTimeout %v is negative", ErrBadConfig, c.IdleInTransactionTimeout)
	}
	if _, err := splitTable(c.Table); err != nil {
		return err
	}
	return nil
}

// splitTable splits "schema.table" or "table" into its parts.
func splitTable(name string) ([]string, error) {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return nil, fmt.Errorf("%w: table %q: want TABLE or SCHEMA.TABLE", ErrBadConfig, name)
	}
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("%w: table %q: empty name part", ErrBadConfig, name)
		}
	}
	return parts, nil
}
