package pgsink

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"
)

// Config configures a Sink.
type Config struct {
	// DSN is the PostgreSQL connection string (URL or key=value form). Required.
	DSN string
	// Table is the target table, "table" (resolved by the DSN's search_path) or
	// "schema.table". Without Rows it must exist with the columns of TableSchema.
	// Required.
	Table string
	// Stream is the Lockstep stream copied into Table. Required.
	Stream string
	// Rows, if set, makes the sink typed: it writes each record's columns, decoded with
	// Rows.Schema, appended or upserted (Rows.Mode), into a Table that it creates if it
	// does not exist and refuses (ErrTableSchema) if it lacks a column, has one of another
	// type or, to upsert, no unique key on the key column. A view's changelog (the stream
	// named as the view) is upserted, its deletes applied. Nil: the raw layout of
	// TableSchema.
	Rows *Rows
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
	// Group, if set, makes the sink a member of this Lockstep consumer group on Stream:
	// it writes only the partitions the group assigns it, so several sink processes with
	// the same Group, Table and Stream share the stream's partitions. Empty: the sink
	// writes every partition.
	Group string
	// Member is the sink's member id in Group: a restarted process that keeps its id
	// takes its own place at once. Default: the host name and the process id.
	Member string
	// GroupSessionTimeout is how long Group keeps a member it has no heartbeat from (its
	// partitions are reassigned after it). Default 10s.
	GroupSessionTimeout time.Duration
	// OnTrimmed says what the sink does when the stream's retention trimmed records
	// before it wrote them: TrimmedFail (the default) or TrimmedSkip.
	OnTrimmed TrimmedPolicy
	// Logger receives the sink's logs. Default: slog.Default().
	Logger *slog.Logger
}

// TrimmedPolicy is what a sink does about records trimmed by retention before it wrote
// them.
type TrimmedPolicy string

const (
	// TrimmedFail stops the sink with an error matching ErrTrimmed and
	// client.ErrOffsetTrimmed, writing nothing more: the table cannot hold those records.
	TrimmedFail TrimmedPolicy = "fail"
	// TrimmedSkip logs the range of records lost (a warning) and goes on from the first
	// record retention kept.
	TrimmedSkip TrimmedPolicy = "skip"
)

// DefaultConfig returns a Config with the defaults filled in and the required fields
// empty.
func DefaultConfig() Config {
	return Config{
		OffsetCommitInterval:     time.Second,
		IdleInTransactionTimeout: 10 * time.Second,
		GroupSessionTimeout:      10 * time.Second,
		OnTrimmed:                TrimmedFail,
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
	if c.GroupSessionTimeout == 0 {
		c.GroupSessionTimeout = d.GroupSessionTimeout
	}
	if c.OnTrimmed == "" {
		c.OnTrimmed = d.OnTrimmed
	}
	if c.Group != "" && c.Member == "" {
		host, err := os.Hostname()
		if err != nil {
			host = "sink"
		}
		c.Member = fmt.Sprintf("%s-%d", host, os.Getpid())
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
	case c.GroupSessionTimeout < 0:
		return fmt.Errorf("%w: GroupSessionTimeout %v is negative", ErrBadConfig, c.GroupSessionTimeout)
	case c.OnTrimmed != "" && c.OnTrimmed != TrimmedFail && c.OnTrimmed != TrimmedSkip:
		return fmt.Errorf("%w: OnTrimmed %q: want %q or %q", ErrBadConfig, c.OnTrimmed, TrimmedFail, TrimmedSkip)
	case c.Group == "" && c.Member != "":
		return fmt.Errorf("%w: Member %q without a Group", ErrBadConfig, c.Member)
	}
	if _, err := splitTable(c.Table); err != nil {
		return err
	}
	if c.Rows != nil {
		if _, err := newLayout(*c.Rows); err != nil {
			return err
		}
		if c.Rows.Schema.Name != c.Stream {
			return fmt.Errorf("%w: Stream %q but Rows.Schema is of %q (a view's changelog stream is named as the view)", ErrBadConfig, c.Stream, c.Rows.Schema.Name)
		}
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
