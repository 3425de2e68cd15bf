package plan

import (
	"bytes"
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/window"
	"github.com/vmihailenco/msgpack/v5"
)

// maxGroupKey is the longest group key: the window operator's row keys hold it escaped
// (window.Aggregate.Process).
const maxGroupKey = (partition.MaxKeyBytes - 18) / 2

// exchanged is a record of a view's n.by_key stream: an input row that passed WHERE,
// keyed by its group key, with the exchange watermark it was emitted under.
type exchanged struct {
	Stamp int64  `msgpack:"w"`
	Key   []byte `msgpack:"k"`           // the input record's key
	Off   uint64 `msgpack:"o"`           // the input record's offset
	Row   []byte `msgpack:"r"`           // the input row, as its record holds it
	Side  byte   `msgpack:"s,omitempty"` // a stream–stream join's side (sideLeft, sideRight)
	Neg   bool   `msgpack:"n,omitempty"` // a retraction of Row (a view over changing rows)
}

// groupRecord is what the aggregation folds: the input record (for the late stream) and
// the values of the view's aggregates for it. err collects a Fold failure, which
// window.Config.Add cannot return.
type groupRecord struct {
	key, row []byte
	time     int64 // the row's event time
	vals     []any
	err      *error
}

// router is a grouped view's first processor: it checks each input row, publishes the
// partition's watermark (windowed views), applies WHERE and emits the row to n.by_key on
// the partition of its group key.
func router(v *View, src watermarker, opts ...procedures.ProcessorOption) processorDef {
	out := v.Name + SuffixByKey
	need := v.groupInputCols()
	return processorDef{name: v.Name + SuffixByKey, input: v.Input.Name,
		fn: func(tx *partition.Tx, rec partition.Record) error {
			row, raw, _, err := readInput(&v.Input, v.From, rec, need)
			if err != nil {
				return err
			}
			t := v.Input.RecordTime(row, rec.EventTime)
			if v.Window != nil && v.Window.Kind == WindowSession && t < minSessionTime {
				return fmt.Errorf("%w: view %s: event time %d is before the earliest a session window takes (%d)", ErrEval, v.Name, t, int64(minSessionTime))
			}
			stamp := int64(partition.NoWatermark)
			if src != nil {
				// Every row moves the watermark, filtered or not: it is the input's
				// progress in event time, not the view's.
				if stamp, err = src.Observe(tx, t); err != nil {
					return err
				}
			}
			if ok, err := v.where(row); err != nil || !ok {
				return err
			}
			gkey, err := v.groupKey(row)
			if err != nil {
				return err
			}
			b, err := marshalExchanged(&exchanged{Stamp: stamp, Key: rec.Key, Row: raw})
			if err != nil {
				return err
			}
			return tx.Emit(out, gkey, b, t)
		},
		opts: append(opts, procedures.Output(out, partition.StreamConfig{}),
			procedures.ProcessorDoc("sql: view "+v.Name+": repartitions rows by group key"))}
}

// groupKey is the canonical row of the GROUP BY values: the record key rows are
// repartitioned by.
func (v *View) groupKey(row []any) ([]byte, error) {
	vals := make([]any, len(v.GroupBy))
	for i, g := range v.GroupBy {
		x, err := g.Eval(row)
		if err != nil {
			return nil, fmt.Errorf("view %s: GROUP BY %d: %w", v.Name, i+1, err)
		}
		vals[i] = x
	}
	k := AppendRow(nil, vals)
	if len(k) > maxGroupKey {
		return nil, fmt.Errorf("%w: view %s: group key of %d bytes, at most %d", ErrEval, v.Name, len(k), maxGroupKey)
	}
	return k, nil
}

// decodeExchanged reads a record of n.by_key and evaluates the aggregates' values,
// decoding the columns in need only (v.groupInputCols).
func (v *View) decodeExchanged(rec partition.Record, need colSet) (exchanged, groupRecord, error) {
	var x exchanged
	if err := unmarshalExchanged(rec.Value, &x); err != nil {
		return x, groupRecord{}, fmt.Errorf("%w: %s%s record: %w", ErrCorrupt, v.Name, SuffixByKey, err)
	}
	row, err := v.Input.decodeRecordCols(x.Row, need)
	if err != nil {
		return x, groupRecord{}, err
	}
	g := groupRecord{key: x.Key, row: x.Row, vals: make([]any, len(v.Aggs)), err: new(error)}
	for i := range v.Aggs {
		if g.vals[i], err = v.Aggs[i].Value(row); err != nil {
			return x, g, fmt.Errorf("view %s: aggregate %d: %w", v.Name, i+1, err)
		}
	}
	return x, g, nil
}

func (v *View) initStates() []AggState { return make([]AggState, len(v.Aggs)) }

func (v *View) fold(st []AggState, g groupRecord) []AggState {
	if *g.err != nil {
		return st
	}
	for i := range v.Aggs {
		if err := v.Aggs[i].Fold(&st[i], g.vals[i]); err != nil {
			*g.err = fmt.Errorf("view %s: aggregate %d: %w", v.Name, i+1, err)
			return st
		}
	}
	return st
}

// groupRow is the row Output and Having read: group values, aggregate results, then the
// window's bounds when bounds is set.
func (v *View) groupRow(gkey []byte, st []AggState, bounds *[2]int64) ([]any, error) {
	types := make([]Type, len(v.GroupBy))
	for i, g := range v.GroupBy {
		types[i] = g.Type
	}
	row, _, reason := decodeRow(gkey, types, allCols)
	if reason != "" {
		return nil, fmt.Errorf("%w: view %s: group key: %s", ErrCorrupt, v.Name, reason)
	}
	if len(st) != len(v.Aggs) {
		return nil, fmt.Errorf("%w: view %s: %d aggregate states for %d aggregates", ErrCorrupt, v.Name, len(st), len(v.Aggs))
	}
	for i := range v.Aggs {
		x, err := v.Aggs[i].Result(&st[i])
		if err != nil {
			return nil, err
		}
		row = append(row, x)
	}
	if bounds != nil {
		row = append(row, bounds[0], bounds[1])
	}
	return row, nil
}

// windowed is a windowed view's processors: the router, then a window.Aggregate fed
// across the exchange.
func windowed(v *View) ([]processorDef, error) {
	byKey, late := v.Name+SuffixByKey, v.Name+SuffixLate
	need := v.groupInputCols()
	src, srcOpts, err := newWatermarker(&v.Input, v.From, byKey)
	if err != nil {
		return nil, err
	}
	agg, err := window.New(window.Config[groupRecord, []AggState]{
		Name:            v.Name + SuffixOperator,
		Assigner:        v.Window.Assigner(),
		Exchange:        byKey,
		AllowedLateness: v.AllowedLatenessMs,
		Panes:           v.Window.Panes,
		Init:            v.initStates,
		Add:             v.fold,
		Merge: func(a, b []AggState) []AggState {
			for i := range v.Aggs {
				a[i] = v.Aggs[i].Merge(a[i], b[i])
			}
			return a
		},
		AppendValue: appendAggStates,
		DecodeValue: decodeAggStates,
		Emit: func(tx *partition.Tx, r window.Result[[]AggState]) error {
			if r.Retracted { // a session merged into another: its row goes
				return v.remove(tx, appendTime(bytes.Clone(r.Key), r.Start), r.End)
			}
			switch {
			case v.Emit == EmitOnClose && !r.Final:
				return nil
			case v.Emit == EmitChanges && r.Final && r.Revision > 0:
				return nil // the value of the last revision, already published
			}
			group, err := v.groupRow(r.Key, r.Value, &[2]int64{r.Start, r.End})
			if err != nil {
				return err
			}
			return v.publish(tx, appendTime(bytes.Clone(r.Key), r.Start), group, r.End)
		},
		Late: func(tx *partition.Tx, l window.LateRecord[groupRecord]) error {
			_, err := tx.Append(late, l.Value.key, l.Value.row, l.Value.time)
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	agg2 := processorDef{name: v.Name + SuffixWindow, input: byKey,
		fn: func(tx *partition.Tx, rec partition.Record) error {
			x, g, err := v.decodeExchanged(rec, need)
			if err != nil {
				return err
			}
			t := rec.EventTime
			switch v.Window.Kind {
			case WindowHop:
				t, err = v.hopTime(tx, t, x.Stamp)
			case WindowSession:
				t, err = v.sessionTime(tx, t, x.Stamp)
			}
			if err != nil {
				return err
			}
			g.time = rec.EventTime
			if err := agg.ProcessStamped(tx, rec.Key, t, x.Stamp, g); err != nil {
				return err
			}
			return *g.err
		},
		opts: []procedures.ProcessorOption{procedures.Output(v.Name, partition.StreamConfig{}),
			procedures.Output(late, partition.StreamConfig{}), procedures.OnTick(agg.Advance),
			procedures.WindowOperators(v.Name + SuffixOperator),
			procedures.ProcessorDoc("sql: view " + v.Name + ": windowed aggregation")}}
	return []processorDef{router(v, src, srcOpts...), agg2}, nil
}

// hopTime returns the event time to give the window operator for a HOP row of event
// time t stamped with stamp. A row whose earliest window has closed is late as a whole,
// even if later windows are still open: it gets a time all of whose windows have closed,
// so the operator counts it in none and sends it to the late stream. Otherwise a row
// would count in some of its windows and not others, and no set of on-time rows would
// give the view (docs/sql.md, "Late rows").
func (v *View) hopTime(tx *partition.Tx, t, stamp int64) (int64, error) {
	st, err := window.ReadOperator(tx, v.Name+SuffixOperator)
	if err != nil {
		return 0, err
	}
	wm := max(st.Watermark, stamp)
	firstEnd := floorDiv(t, v.Window.SlideMs)*v.Window.SlideMs + v.Window.SlideMs
	if wm == partition.NoWatermark || firstEnd+v.AllowedLatenessMs > wm {
		return t, nil
	}
	return firstEnd - v.Window.SizeMs - 1, nil
}

// sessionTime returns the event time to give the window operator for a SESSION row of
// event time t stamped with stamp. A row is late when t < watermark − allowed lateness:
// only then could it overlap a session already closed (whose state is gone), so that it
// would start a session of its own where the batch query merges it. Such a row gets
// window.MinTime, whose window is closed and overlaps no session (the router refuses
// event times near MinTime), so the operator counts it late and sends it to the late
// stream.
func (v *View) sessionTime(tx *partition.Tx, t, stamp int64) (int64, error) {
	st, err := window.ReadOperator(tx, v.Name+SuffixOperator)
	if err != nil {
		return 0, err
	}
	wm := max(st.Watermark, stamp)
	if wm == partition.NoWatermark || t >= wm-v.AllowedLatenessMs {
		return t, nil
	}
	return window.MinTime, nil
}

// minSessionTime is the earliest event time of a SESSION view's rows: earlier ones could
// overlap the window of window.MinTime that sessionTime gives late rows.
const minSessionTime = window.MinTime + window.MaxSpan

// grouped is an unwindowed aggregated view's processors: the router, then a running
// aggregate per group in table n.state, published on every row.
func grouped(v *View) []processorDef {
	if v.From != nil && v.From.Updating {
		return retracting(v)
	}
	state, need := v.Name+SuffixState, v.groupInputCols()
	agg := processorDef{name: v.Name + SuffixGroup, input: v.Name + SuffixByKey,
		fn: func(tx *partition.Tx, rec partition.Record) error {
			_, g, err := v.decodeExchanged(rec, need)
			if err != nil {
				return err
			}
			st := v.initStates()
			if b, ok := tx.Get(state, rec.Key); ok {
				if err := msgpack.Unmarshal(b, &st); err != nil {
					return fmt.Errorf("%w: %s: %w", ErrCorrupt, state, err)
				}
			}
			st = v.fold(st, g)
			if *g.err != nil {
				return *g.err
			}
			b, err := msgpack.Marshal(st)
			if err != nil {
				return err
			}
			if err := tx.Put(state, rec.Key, b); err != nil {
				return err
			}
			group, err := v.groupRow(rec.Key, st, nil)
			if err != nil {
				return err
			}
			return v.publish(tx, rec.Key, group, 0)
		},
		opts: []procedures.ProcessorOption{procedures.Output(v.Name, partition.StreamConfig{}),
			procedures.ProcessorDoc("sql: view " + v.Name + ": running aggregation")}}
	return []processorDef{router(v, nil), agg}
}
