package window

import (
	"encoding/binary"
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
)

// WatermarkConfig configures a Watermark. Times are Unix milliseconds, durations
// milliseconds, each 0..MaxSpan.
type WatermarkConfig struct {
	// Table names the partition table holding the watermark's one row. Required.
	Table string
	// OutOfOrderness is how far behind the highest event time seen a record may still
	// arrive without being behind the watermark. Default 0: records arrive in order.
	OutOfOrderness int64
	// IdleTimeout is how long, in batch time, no record must have arrived before batch
	// time advances the watermark. Default 0: only records advance it.
	IdleTimeout int64
	// IdleDelay is how far event time is assumed to trail batch time when the partition
	// is idle: an idle watermark is batch time − OutOfOrderness − IdleDelay. Default 0.
	IdleDelay int64
}

// A Watermark tracks, in one partition, how far event time has progressed for one
// processor or operator: the point before which no more records are expected. Its state
// is one row of a partition table, written through the caller's Tx.
//
// The watermark is defined by its steps. It starts at NoWatermark; a step happens at batch
// time now (Tx.Now, in milliseconds) and may carry a record's event time t:
//
//  1. idle advance: when a record has arrived before and now − last ≥ IdleTimeout (with
//     IdleTimeout > 0; last is the latest batch time a record arrived), the watermark
//     becomes max(watermark, now − OutOfOrderness − IdleDelay);
//  2. with a record: maxSeen becomes max(maxSeen, t), last becomes max(last, now), and
//     the watermark becomes max(watermark, maxSeen − OutOfOrderness).
//
// Observe is a step with a record, Advance a step without. The watermark never goes
// backwards, and it depends only on the steps' batch times and event times, so it is the
// same on every replica. Because the idle rule runs in every step, the watermark after a
// record does not depend on whether Advance was called during the idle time before it.
//
// A Watermark holds only its configuration: one value serves every partition, from every
// partition's goroutine.
type Watermark struct {
	cfg WatermarkConfig
}

// watermarkRow is the row key of the watermark's state in its table.
var watermarkRow = []byte("wm")

// NewWatermark checks cfg and returns the Watermark it describes.
func NewWatermark(cfg WatermarkConfig) (*Watermark, error) {
	if cfg.Table == "" || len(cfg.Table) > partition.MaxNameBytes {
		return nil, fmt.Errorf("%w: watermark table %q: 1..%d bytes", ErrBadConfig, cfg.Table, partition.MaxNameBytes)
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"out-of-orderness", cfg.OutOfOrderness}, {"idle timeout", cfg.IdleTimeout}, {"idle delay", cfg.IdleDelay}} {
		if !checkSpan(f.v) {
			return nil, fmt.Errorf("%w: watermark %s %d not in 0..%d", ErrBadConfig, f.name, f.v, MaxSpan)
		}
	}
	return &Watermark{cfg: cfg}, nil
}

// Config returns the watermark's configuration.
func (w *Watermark) Config() WatermarkConfig { return w.cfg }

// Current returns the watermark in tx's partition, NoWatermark before the first record.
func (w *Watermark) Current(tx *partition.Tx) (int64, error) {
	s, err := w.load(tx)
	return s.Mark, err
}

// Observe records the arrival of a record with event time t at tx's batch time and
// returns the new watermark.
func (w *Watermark) Observe(tx *partition.Tx, t int64) (int64, error) {
	if err := checkTime(t); err != nil {
		return 0, fmt.Errorf("event time %d: %w", t, err)
	}
	return w.step(tx, &t, NoWatermark)
}

// Advance applies the idle rule at tx's batch time and returns the watermark. It writes
// only when the watermark moves.
func (w *Watermark) Advance(tx *partition.Tx) (int64, error) { return w.step(tx, nil, NoWatermark) }

// Raise raises the watermark to at least up, a watermark from upstream (Source, through
// the exchange), and returns it. It writes only when the watermark moves.
func (w *Watermark) Raise(tx *partition.Tx, up int64) (int64, error) { return w.step(tx, nil, up) }

func (w *Watermark) step(tx *partition.Tx, t *int64, up int64) (int64, error) {
	s, err := w.load(tx)
	if err != nil {
		return 0, err
	}
	next := w.cfg.next(s, BatchTime(tx), t)
	next.Mark = max(next.Mark, up)
	if next != s {
		if err := tx.Put(w.cfg.Table, watermarkRow, next.encode()); err != nil {
			return 0, fmt.Errorf("watermark %s: %w", w.cfg.Table, err)
		}
	}
	return next.Mark, nil
}

func (w *Watermark) load(tx *partition.Tx) (watermarkState, error) {
	b, ok := tx.Get(w.cfg.Table, watermarkRow)
	if !ok {
		return watermarkState{Mark: NoWatermark}, nil
	}
	s, ok := decodeWatermark(b)
	if !ok {
		return s, fmt.Errorf("%w: watermark %s: %x", ErrCorrupt, w.cfg.Table, b)
	}
	return s, nil
}

// BatchTime returns tx's batch time in Unix milliseconds: the event time to give records
// of processing-time windows.
func BatchTime(tx *partition.Tx) int64 { return tx.Now().UnixMilli() }

// watermarkState is the stored state of a Watermark.
type watermarkState struct {
	Seen    bool  // a record has arrived
	MaxSeen int64 // highest event time seen
	Last    int64 // latest batch time a record arrived
	Mark    int64 // the watermark
}

// next is one step of the watermark (see Watermark): pure, so it can be tested alone.
func (c WatermarkConfig) next(s watermarkState, now int64, t *int64) watermarkState {
	if s.Seen && c.IdleTimeout > 0 && now-s.Last >= c.IdleTimeout {
		s.Mark = max(s.Mark, now-c.OutOfOrderness-c.IdleDelay)
	}
	if t != nil {
		if !s.Seen {
			s.Seen, s.MaxSeen, s.Last = true, *t, now
		}
		s.MaxSeen = max(s.MaxSeen, *t)
		s.Last = max(s.Last, now)
		s.Mark = max(s.Mark, s.MaxSeen-c.OutOfOrderness)
	}
	return s
}

const watermarkBytes = 1 + 3*timeBytes

func (s watermarkState) encode() []byte {
	b := make([]byte, 1, watermarkBytes)
	if s.Seen {
		b[0] = 1
	}
	b = binary.BigEndian.AppendUint64(b, uint64(s.MaxSeen))
	b = binary.BigEndian.AppendUint64(b, uint64(s.Last))
	return binary.BigEndian.AppendUint64(b, uint64(s.Mark))
}

func decodeWatermark(b []byte) (watermarkState, bool) {
	if len(b) != watermarkBytes || b[0] > 1 {
		return watermarkState{Mark: NoWatermark}, false
	}
	return watermarkState{
		Seen:    b[0] == 1,
		MaxSeen: int64(binary.BigEndian.Uint64(b[1:])),
		Last:    int64(binary.BigEndian.Uint64(b[9:])),
		Mark:    int64(binary.BigEndian.Uint64(b[17:])),
	}, true
}
