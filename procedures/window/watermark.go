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
	// ProcessingTime is for records whose event time is the batch time (BatchTime): every
	// step, with a record or not, raises the watermark to batch time − OutOfOrderness, so
	// windows fire as batch time passes. Event-time watermarks (the default) never look
	// at batch time: a pause in the input does not make old records late.
	ProcessingTime bool
}

// A Watermark tracks, in one partition, how far event time has progressed for one
// processor or operator: the point before which no more records are expected. Its state
// is one row of a partition table, written through the caller's Tx.
//
// The watermark is defined by its steps. It starts at NoWatermark; a step happens at batch
// time now (Tx.Now, in milliseconds) and may carry a record's event time t, or a
// watermark w from upstream:
//
//  1. with ProcessingTime, the watermark becomes max(watermark, now − OutOfOrderness);
//  2. with a record (Observe): maxSeen becomes max(maxSeen, t) and the watermark
//     max(watermark, maxSeen − OutOfOrderness);
//  3. with an upstream watermark (Raise): the watermark becomes max(watermark, w).
//
// Advance is a step with neither. The watermark never goes backwards, and it depends only
// on the steps' event times (and batch times with ProcessingTime), so it is the same on
// every replica. An idle input does not move an event-time watermark: with one source
// there is nothing for an idle source to stop holding back (see Source for the
// exchange, where there is).
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
	if !checkSpan(cfg.OutOfOrderness) {
		return nil, fmt.Errorf("%w: watermark out-of-orderness %d not in 0..%d", ErrBadConfig, cfg.OutOfOrderness, MaxSpan)
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

// Advance applies a step without a record at tx's batch time (it moves only a
// ProcessingTime watermark) and returns the watermark. It writes only when the watermark
// moves.
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
	Last    int64 // latest batch time a record arrived (kept for the row format; unused)
	Mark    int64 // the watermark
}

// next is one step of the watermark (see Watermark) with a record's event time t or
// none: pure, so it can be tested alone.
func (c WatermarkConfig) next(s watermarkState, now int64, t *int64) watermarkState {
	if c.ProcessingTime {
		s.Mark = max(s.Mark, now-c.OutOfOrderness)
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
