package window

import (
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
)

// SourceConfig configures a Source. Durations are milliseconds, 0..MaxSpan.
type SourceConfig struct {
	// Stream is the stream the source's processor emits to, across the exchange: the
	// input of the downstream Aggregate (Config.Exchange). Required.
	Stream string
	// OutOfOrderness is how far behind the highest event time this partition has seen a
	// record may still come and be on time. Default 0.
	OutOfOrderness int64
	// IdleTimeout is how long, in batch time, a partition that sees no record stops
	// holding the downstream watermark back. Default 0: never; a partition without
	// records then holds every downstream window open.
	IdleTimeout int64
}

// A Source is the upstream end of a watermark that crosses the exchange: the processor
// that reads records on each partition and emits them to Stream (a repartitioner)
// calls Observe for each record it emits. Each partition's watermark is its highest event
// time seen − OutOfOrderness; the engine combines the partitions' watermarks at the end
// of every log entry (partition.SysWatermarks: the minimum over the partitions that are
// not idle, the maximum when all are) into the stream's exchange watermark. Observe
// returns the exchange watermark as of the end of the previous entry: the emitted
// record carries it (the caller puts it in the record's value) to the downstream
// Aggregate's ProcessStamped, so the record is judged late or on time against a value
// that is the same on every partition, wherever its key sends it.
//
// A Source holds only its configuration: one value serves every partition.
type Source struct {
	cfg SourceConfig
}

// NewSource checks cfg and returns the Source it describes.
func NewSource(cfg SourceConfig) (*Source, error) {
	switch {
	case cfg.Stream == "" || len(cfg.Stream) > partition.MaxNameBytes:
		return nil, fmt.Errorf("%w: source stream %q: 1..%d bytes", ErrBadConfig, cfg.Stream, partition.MaxNameBytes)
	case !checkSpan(cfg.OutOfOrderness):
		return nil, fmt.Errorf("%w: source out-of-orderness %d not in 0..%d", ErrBadConfig, cfg.OutOfOrderness, MaxSpan)
	case !checkSpan(cfg.IdleTimeout):
		return nil, fmt.Errorf("%w: source idle timeout %d not in 0..%d", ErrBadConfig, cfg.IdleTimeout, MaxSpan)
	}
	return &Source{cfg: cfg}, nil
}

// Config returns the source's configuration.
func (s *Source) Config() SourceConfig { return s.cfg }

// Observe records, in the Tx of the processor that emits it, a record of event time t
// emitted to Stream, and returns the stamp the record must carry downstream: the
// exchange watermark before this log entry (NoWatermark before the first). An error
// (ErrTimeRange, or the Tx's: a processor that does not declare Stream) must fail the Tx.
func (s *Source) Observe(tx *partition.Tx, t int64) (stamp int64, err error) {
	if err := checkTime(t); err != nil {
		return 0, fmt.Errorf("event time %d: %w", t, err)
	}
	stamp = tx.ExchangeWatermark(s.cfg.Stream)
	if err := tx.AdvanceWatermark(s.cfg.Stream, t-s.cfg.OutOfOrderness, s.cfg.IdleTimeout); err != nil {
		return 0, err
	}
	return stamp, nil
}
