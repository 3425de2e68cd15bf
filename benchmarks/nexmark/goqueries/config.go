package goqueries

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/window"
)

// ErrUnknownQuery is a query name Register does not know.
var ErrUnknownQuery = errors.New("nexmark: unknown query")

// Queries lists the queries this package implements, in order.
var Queries = []string{"q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8"}

// Config configures the queries' watermarks. Durations are whole milliseconds.
type Config struct {
	// OutOfOrderness is how far behind the highest event time an input partition has
	// seen an event may come and be on time. Default 1 s; it must cover the generator's
	// nexmark.Config.MaxDisorderMs for no event to be late.
	OutOfOrderness time.Duration
	// IdleTimeout: an input partition that gets no records for this long (batch time)
	// stops holding the watermark back. Default 10 s; negative turns it off.
	IdleTimeout time.Duration
}

// DefaultConfig returns the default configuration.
func DefaultConfig() Config {
	return Config{OutOfOrderness: time.Second, IdleTimeout: 10 * time.Second}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.OutOfOrderness == 0 {
		c.OutOfOrderness = d.OutOfOrderness
	}
	switch {
	case c.IdleTimeout == 0:
		c.IdleTimeout = d.IdleTimeout
	case c.IdleTimeout < 0:
		c.IdleTimeout = 0
	}
	return c
}

// Validate checks c.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.OutOfOrderness < 0 || c.OutOfOrderness.Milliseconds() > window.MaxSpan || c.IdleTimeout.Milliseconds() > window.MaxSpan {
		return fmt.Errorf("%w: nexmark queries: out-of-orderness %v, idle timeout %v", window.ErrBadConfig, c.OutOfOrderness, c.IdleTimeout)
	}
	return nil
}

// Output returns the name of query q's result stream.
func Output(q string) string { return "nexmark." + q }

// Late returns the name of windowed query q's late stream.
func Late(q string) string { return "nexmark." + q + ".late" }

// register lists each query's registration.
var register = map[string]func(reg *registrar, c Config) error{
	"q0": registerQ0, "q1": registerQ1, "q2": registerQ2, "q3": registerQ3,
	"q4": registerQ4, "q5": registerQ5, "q7": registerQ7, "q8": registerQ8,
}

// Register registers the processors of the named queries (all of Queries if none) in r,
// or nothing (but for a cycle through r's other processors, found only as they are
// added): it fails with ErrUnknownQuery, window.ErrBadConfig, or as
// procedures.RegisterProcessor does.
func Register(r *procedures.Registry, cfg Config, queries ...string) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	if len(queries) == 0 {
		queries = Queries
	}
	for _, q := range queries {
		if !slices.Contains(Queries, q) {
			return fmt.Errorf("%w: %q (known: %v)", ErrUnknownQuery, q, Queries)
		}
	}
	reg := &registrar{}
	for _, q := range queries {
		if err := register[q](reg, cfg); err != nil {
			return fmt.Errorf("nexmark %s: %w", q, err)
		}
	}
	return reg.commit(r)
}
