package plan

import (
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/window"
)

// Views over views (plan version 3). A view may read another view's changelog stream
// instead of a stream, in one of two ways, which ViewInput records:
//
//   - final rows: the upstream is a TUMBLE or HOP view that emits each window's row once,
//     when it closes (EMIT ON WINDOW CLOSE): its changelog is a stream of inserts whose
//     event time is one of its columns (window_end, window_start, or a grouped
//     event-time column). Its watermark is not "highest time seen less an
//     out-of-orderness": it is exact, the upstream's window operator watermark less
//     LagMs, below which the upstream emits nothing more. The reading processor
//     publishes it from its OnTick hook once it has handled every changelog record of its
//     partition (viewSource), never idles, so a downstream window or join sees a view's
//     rows no later than the watermark that lets it forget them: none is ever late.
//   - updating rows: any other view, whose rows are inserted, updated and deleted. Only
//     an unwindowed aggregate reads it: the router keeps the last row of each upstream
//     key (table v.prev) and emits, for each change, the retraction of the old row and
//     the new one; the aggregate folds them with signs (COUNT, SUM and AVG of integers,
//     which retract exactly).

// ViewInput says how a view reads the view it names as its input (or a join's right
// side): plan version 3.
type ViewInput struct {
	// Updating marks an upstream whose rows change: the reader retracts. Otherwise the
	// upstream's rows are final and the reader takes the watermark of its window
	// operator (the upstream's name + SuffixOperator) less LagMs.
	Updating bool `msgpack:"upd,omitempty"`
	// LagMs is how far below the upstream operator's watermark the event time of a row
	// still to come can be (final rows).
	LagMs int64 `msgpack:"lag,omitempty"`
}

// ViewOffer is what a view offers a view that reads it: its rows' event-time column
// and lag (final rows), or that its rows change. Plan.Schemas attaches it to each view's
// schema (Schema.Offer); it is derived from the view's plan, never encoded.
type ViewOffer struct {
	// Final is set for a TUMBLE or HOP view with EMIT ON WINDOW CLOSE.
	Final bool
	// TimeCol is the column that is each row's event time (final rows), -1 for none:
	// the first of window_end, window_start or a grouped event-time column in the
	// select list.
	TimeCol int
	// LagMs is as ViewInput's.
	LagMs int64
}

// Offer returns what v offers its readers.
func (v *View) Offer() *ViewOffer {
	o := &ViewOffer{TimeCol: -1}
	w := v.Window
	if w == nil || w.Kind == WindowSession || v.Emit != EmitOnClose {
		return o
	}
	o.Final = true
	nk := len(v.GroupBy) + len(v.Aggs)
	best := 3
	for i, e := range v.Output {
		if e.Op != OpCol || e.Type != TypeTimestamp {
			continue
		}
		rank, lag := 3, int64(0)
		switch {
		case e.Col == nk+1: // window_end: every row still to come ends after W − L
			rank, lag = 0, v.AllowedLatenessMs
		case e.Col < len(v.GroupBy) && v.GroupBy[e.Col].Op == OpCol && v.GroupBy[e.Col].Col == v.Input.EventTime:
			rank, lag = 1, v.AllowedLatenessMs+w.SizeMs // a row's time is at least its window's start
		case e.Col == nk: // window_start
			rank, lag = 2, v.AllowedLatenessMs+w.SizeMs
		}
		if rank < best {
			best, o.TimeCol, o.LagMs = rank, i, lag
		}
	}
	return o
}

// readInput decodes a record of the stream or view s: the row, the row's bytes as the
// downstream decodes them (Schema.DecodeRecord), and the change (ChangeInsert for a
// stream's record).
func readInput(s *Schema, from *ViewInput, rec partition.Record, need colSet) ([]any, []byte, byte, error) {
	if from == nil {
		row, err := s.checkRecordCols(rec.Key, rec.Value, need)
		return row, rec.Value, ChangeInsert, err
	}
	v := rec.Value
	if len(v) < 1 || (v[0] != ChangeInsert && v[0] != ChangeUpdate && v[0] != ChangeDelete) {
		return nil, nil, 0, fmt.Errorf("%w: changelog record of %s: %d bytes", ErrCorrupt, s.Name, len(v))
	}
	if !from.Updating && v[0] != ChangeInsert {
		return nil, nil, 0, fmt.Errorf("%w: changelog record %c of %s, whose rows are final", ErrCorrupt, v[0], s.Name)
	}
	row, err := s.decodeRowCols(v[1:], need)
	if err == nil && s.EventTime >= 0 && row[s.EventTime] == nil {
		err = &RowError{Stream: s.Name, Column: s.Columns[s.EventTime].Name, Reason: "NULL in the event-time column"}
	}
	return row, v[1:], v[0], err
}

// watermarker is how a router stamps what it emits: a window.Source over a stream, a
// viewSource over a view's final rows.
type watermarker interface {
	Observe(tx *partition.Tx, t int64) (int64, error)
}

// viewSource publishes, for a processor that reads a view's final rows and emits to
// stream, the upstream's exact watermark (see the file comment).
type viewSource struct {
	stream, operator string
	lagMs            int64
}

// Observe returns the stamp of a record emitted to the stream: its exchange watermark
// before this entry. It publishes nothing: tick does.
func (s *viewSource) Observe(tx *partition.Tx, t int64) (int64, error) {
	return tx.ExchangeWatermark(s.stream), nil
}

// tick publishes the upstream operator's watermark less the lag, once the processor has
// handled its input on the partition (a record still waiting may be older); before the
// operator has one, it publishes NoWatermark, so that the stream is held back from the
// start. It never idles.
func (s *viewSource) tick(tx *partition.Tx) error {
	if !tx.InputCaughtUp() {
		return nil
	}
	st, err := window.ReadOperator(tx, s.operator)
	if err != nil {
		return err
	}
	mark := int64(partition.NoWatermark)
	if st.Watermark != window.NoWatermark && st.Watermark-s.lagMs > partition.NoWatermark {
		mark = st.Watermark - s.lagMs
	}
	return tx.AdvanceWatermark(s.stream, mark, 0)
}

// newWatermarker returns the stamping of a router that reads s (from: a view) and emits
// to stream, with the OnTick option it needs.
func newWatermarker(s *Schema, from *ViewInput, stream string) (watermarker, []procedures.ProcessorOption, error) {
	if from != nil {
		vs := &viewSource{stream: stream, operator: s.Name + SuffixOperator, lagMs: from.LagMs}
		return vs, []procedures.ProcessorOption{procedures.OnTick(vs.tick)}, nil
	}
	src, err := window.NewSource(window.SourceConfig{Stream: stream, OutOfOrderness: s.OutOfOrdernessMs, IdleTimeout: s.IdleTimeoutMs})
	if err != nil {
		return nil, nil, err
	}
	return src, nil, nil
}

// validateFrom checks a view's reading of the view s.
func validateFrom(s *Schema, from *ViewInput) error {
	switch {
	case from == nil && s.Kind == KindView:
		return fmt.Errorf("%w: view %s read without a view input", ErrBadPlan, s.Name)
	case from == nil:
		return nil
	case s.Kind != KindView:
		return fmt.Errorf("%w: a view input over %s %s", ErrBadPlan, s.Kind, s.Name)
	case from.Updating && from.LagMs != 0:
		return fmt.Errorf("%w: view input %s: a lag for updating rows", ErrBadPlan, s.Name)
	case !from.Updating && (s.EventTime < 0 || from.LagMs < 0 || !checkSpanMs(from.LagMs)):
		return fmt.Errorf("%w: view input %s: final rows need an event-time column and a lag in 0..%d ms", ErrBadPlan, s.Name, maxSpanMs)
	}
	return nil
}

// usesVersion3 reports whether v needs plan version 3.
func (v *View) usesVersion3() bool {
	if v.From != nil {
		return true
	}
	j := v.Pair
	return j != nil && (j.LateByFreed || j.RightFrom != nil || j.LeftUntil != nil || j.RightUntil != nil || len(v.Aggs) > 0)
}

// validateUpdating checks a view over updating rows: an unwindowed aggregate of
// aggregates that retract exactly.
func (v *View) validateUpdating() error {
	if v.From == nil || !v.From.Updating {
		return nil
	}
	if !v.Aggregated() || v.Window != nil || v.Pair != nil || v.Join != nil {
		return fmt.Errorf("%w: view over the changing rows of %s: only an unwindowed aggregate reads them", ErrBadPlan, v.Input.Name)
	}
	for i, a := range v.Aggs {
		if !a.Retracts() {
			return fmt.Errorf("%w: aggregate %d (%s) over changing rows does not retract", ErrBadPlan, i+1, a.Func)
		}
	}
	return nil
}

// Retracts reports whether the aggregate can take a value back exactly: COUNT, and SUM
// and AVG of integers and intervals, without DISTINCT.
func (a *Agg) Retracts() bool {
	if a.Distinct {
		return false
	}
	switch a.Func {
	case AggCount:
		return true
	case AggSum, AggAvg:
		return a.Arg != nil && a.Arg.Type != TypeDouble
	}
	return false
}
