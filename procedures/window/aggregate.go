package window

import (
	"fmt"
	"reflect"

	"github.com/lockstepdb/lockstep/partition"
)

// Config configures an Aggregate over records of type R with window state of type S.
// Times are Unix milliseconds, durations milliseconds, each 0..MaxSpan.
type Config[R, S any] struct {
	// Name prefixes the operator's tables (see Aggregate.Tables); it must be unique among
	// the operators and tables of the partition. Required.
	Name string
	// Assigner places records in windows: Tumbling, Hopping or Session. Required.
	Assigner Assigner
	// OutOfOrderness and ProcessingTime configure the operator's own watermark (see
	// WatermarkConfig), which Process moves. Default 0 and event time.
	OutOfOrderness int64
	ProcessingTime bool
	// Exchange, if set, names the operator's input stream, filled across the exchange by
	// a processor with a Source: the operator's watermark is then the exchange
	// watermark, carried by each record (ProcessStamped) and read on each tick (Advance),
	// never computed from the records' event times here. OutOfOrderness and
	// ProcessingTime must be unset (the Source has the out-of-orderness).
	Exchange string
	// AllowedLateness is how long past its end, in watermark time, a window still takes
	// records; each changes the result and emits a revision. Default 0: a window closes
	// when it fires.
	AllowedLateness int64

	// Init returns the state of an empty window. Required.
	Init func() S
	// Add returns state with the record added. It may modify and return state. Required.
	Add func(state S, rec R) S
	// Merge returns the state of the union of two session windows, or with Panes of two
	// panes, a starting earlier than b; Init() must be its identity. It may modify and
	// return a, not b. Required for Session and Panes, unused otherwise.
	Merge func(a, b S) S
	// Panes keeps a Hopping operator's state per pane, the Slide-wide slice
	// [k·Slide, (k+1)·Slide), instead of per window: a record updates one row instead of
	// Size/Slide, and a window merges its panes (Merge, in time order) when it fires.
	// Needs Hopping with Size a multiple of Slide, AllowedLateness 0, and an Add and
	// Merge whose result does not depend on the records' order (a count, a sum, a
	// maximum): the results are then exactly those without Panes. The stored state
	// differs, so an operator cannot switch with windows open.
	Panes bool
	// AppendValue and DecodeValue, if both are set, write and read a window's state
	// value without msgpack's reflection: AppendValue must append exactly the canonical
	// msgpack of s (msgpack.Marshal, then canon.Msgpack), DecodeValue read such bytes
	// back, sharing no memory with them, and return the bytes after the value. A
	// DecodeValue error makes the state decode by reflection instead, which reports the
	// error if there is one. The stored bytes are the same with or without them.
	AppendValue func(b []byte, s S) []byte
	DecodeValue func(b []byte) (S, []byte, error)

	// Emit receives every window result, in the Tx of the step that produced it. An error
	// is returned by Process or Advance. Required.
	Emit func(tx *partition.Tx, r Result[S]) error
	// Late receives every late record (see Aggregate). An error is returned by Process.
	// Default nil: late records are dropped.
	Late func(tx *partition.Tx, l LateRecord[R]) error
}

// Result is one emitted result of a window. A window emits Revision 0 when the
// watermark passes its end, then Revision 1, 2, … for each record the window takes
// after that (within the allowed lateness), and when it closes (watermark ≥ End +
// AllowedLateness) a result with Final set — its value repeats the last revision's unless
// the window both fires and closes in one step, in which case Revision 0 is also Final.
// Every window emits exactly one Final result, its last; (Key, Start, Revision) names a
// result uniquely, and the highest revision is the current one.
type Result[S any] struct {
	Key   []byte // the records' grouping key
	Start int64  // the window's bounds [Start, End)
	End   int64
	Value S
	// Revision counts the window's earlier results: 0 for the first.
	Revision int
	// Final is set on the window's last result: its state is gone and it takes no more
	// records.
	Final bool
	// Retracted is set (with Final) when a session window that had emitted results was
	// merged into a session with another start: forget its results. Value is its last
	// value. The merged session emits under its own Start.
	Retracted bool
}

// LateRecord is a record that fell in no window still open: every window it belongs to
// has End + AllowedLateness ≤ Watermark. It changed nothing.
type LateRecord[R any] struct {
	Key       []byte
	EventTime int64
	Value     R
	Watermark int64 // the watermark it was late for
}

// Aggregate is a windowed aggregation over keyed records in event time. Its state lives
// in four tables of the partition, written through the caller's Tx. It holds only its
// configuration, so one Aggregate serves every partition, from every partition's
// goroutine.
//
// For each record (Process), in one Tx:
//
//  1. the watermark observes the record's event time (see Watermark);
//  2. windows are closed up to the watermark (see below);
//  3. the record is placed: in every window it falls in that is still open (End +
//     AllowedLateness > watermark), created with Init if absent, through Add. For
//     Session, its window [t, t+Gap) first merges with the open sessions of its key it
//     overlaps (Merge, in start order). A record placed in no window is late: it is
//     counted (ReadOperator) and goes to Late. A window that has fired and takes the record emits a new revision at once;
//  4. windows are closed again (with allowed lateness, a new window may already be
//     behind the watermark; without, none is).
//
// Closing up to watermark wm fires every window with End ≤ wm that has not fired, by End,
// then key, then start, emitting Revision 0 (Final if End + AllowedLateness ≤ wm too);
// then closes every fired window with End + AllowedLateness ≤ wm, in the same order by
// that time, emitting its Final result, and deletes its state. State is therefore
// bounded by the windows open at the watermark.
//
// With Config.Exchange, step 1 raises the watermark to the record's stamp instead
// (ProcessStamped). Advance, called when time passes with no record, moves the watermark
// (see Advance) and closes windows up to it.
type Aggregate[R, S any] struct {
	cfg         Config[R, S]
	session     bool
	panes       int64 // Config.Panes: the pane width (Hopping.Slide); 0 without panes
	size        int64 // with panes, Hopping.Size
	scalarState bool  // scalarState of S: a saved state needs no canonical rewrite
	wm          *Watermark
	tables      Tables
}

// Tables names the tables of an Aggregate: all are ordinary partition tables, hashed,
// snapshotted and rolled back with the rest of the partition.
type Tables struct {
	Watermark string // Name + ".wm": the watermark's row and the late-record count (ReadOperator)
	State     string // Name + ".win": key‖start → msgpack of the window's state (with Panes, the pane's)
	Fire      string // Name + ".fire": end‖key‖start, one row per window not yet fired
	Close     string // Name + ".close": (end+lateness)‖key‖start, one row per window
}

// New checks cfg and returns the Aggregate it describes.
func New[R, S any](cfg Config[R, S]) (*Aggregate[R, S], error) {
	if cfg.Name == "" || len(cfg.Name)+len(".close") > partition.MaxNameBytes {
		return nil, fmt.Errorf("%w: name %q: 1..%d bytes", ErrBadConfig, cfg.Name, partition.MaxNameBytes-len(".close"))
	}
	if cfg.Assigner == nil {
		return nil, fmt.Errorf("%w: no assigner", ErrBadConfig)
	}
	if err := cfg.Assigner.validate(); err != nil {
		return nil, err
	}
	_, session := cfg.Assigner.(Session)
	switch {
	case !checkSpan(cfg.AllowedLateness):
		return nil, fmt.Errorf("%w: allowed lateness %d not in 0..%d", ErrBadConfig, cfg.AllowedLateness, MaxSpan)
	case cfg.Init == nil || cfg.Add == nil || cfg.Emit == nil:
		return nil, fmt.Errorf("%w: Init, Add and Emit are required", ErrBadConfig)
	case session && cfg.Merge == nil:
		return nil, fmt.Errorf("%w: session windows need Merge", ErrBadConfig)
	case (cfg.AppendValue == nil) != (cfg.DecodeValue == nil):
		return nil, fmt.Errorf("%w: AppendValue and DecodeValue go together", ErrBadConfig)
	case cfg.Panes:
		if err := checkPanes(cfg.Assigner, cfg.AllowedLateness, cfg.Merge != nil); err != nil {
			return nil, err
		}
	case cfg.Exchange != "" && (cfg.OutOfOrderness != 0 || cfg.ProcessingTime):
		return nil, fmt.Errorf("%w: an exchange-driven operator has no out-of-orderness or processing time of its own", ErrBadConfig)
	case len(cfg.Exchange) > partition.MaxNameBytes:
		return nil, fmt.Errorf("%w: exchange stream %q: at most %d bytes", ErrBadConfig, cfg.Exchange, partition.MaxNameBytes)
	}
	a := &Aggregate[R, S]{cfg: cfg, session: session, scalarState: scalarState(reflect.TypeFor[S]()), tables: Tables{
		Watermark: cfg.Name + ".wm",
		State:     cfg.Name + ".win",
		Fire:      cfg.Name + ".fire",
		Close:     cfg.Name + ".close",
	}}
	if h, ok := cfg.Assigner.(Hopping); ok && cfg.Panes {
		a.panes, a.size = h.Slide, h.Size
	}
	var err error
	a.wm, err = NewWatermark(WatermarkConfig{
		Table:          a.tables.Watermark,
		OutOfOrderness: cfg.OutOfOrderness,
		ProcessingTime: cfg.ProcessingTime,
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Tables returns the names of the operator's tables.
func (a *Aggregate[R, S]) Tables() Tables { return a.tables }

// Watermark returns the operator's watermark.
func (a *Aggregate[R, S]) Watermark() *Watermark { return a.wm }

// Process runs the operator for one record with grouping key key (nil or empty is a key
// too) and event time t (use BatchTime(tx) for processing-time windows). An error —
// from the Tx, from Emit or Late, or ErrTimeRange — must fail the caller's Tx, which then
// undoes every change of the step. Keys up to (partition.MaxKeyBytes − 18) / 2 bytes
// always fit in the operator's row keys; a longer one may fail with the Tx's
// partition.ErrKeyTooLarge.
func (a *Aggregate[R, S]) Process(tx *partition.Tx, key []byte, t int64, rec R) error {
	if a.cfg.Exchange != "" {
		return fmt.Errorf("%w: operator %s takes its watermark from the exchange: call ProcessStamped", ErrBadConfig, a.cfg.Name)
	}
	wm, err := a.wm.Observe(tx, t)
	if err != nil {
		return err
	}
	return a.place(tx, key, t, rec, wm)
}

// ProcessStamped is Process for an operator with Config.Exchange: stamp is the exchange
// watermark the record was emitted under (what Source.Observe returned upstream). The
// operator's watermark is raised to it, and the record is on time or late against
// that: the same value whichever partition the record's key belongs to.
func (a *Aggregate[R, S]) ProcessStamped(tx *partition.Tx, key []byte, t, stamp int64, rec R) error {
	if err := checkTime(t); err != nil {
		return fmt.Errorf("event time %d: %w", t, err)
	}
	wm, err := a.wm.Raise(tx, stamp)
	if err != nil {
		return err
	}
	return a.place(tx, key, t, rec, wm)
}

// place is steps 2 to 4 of Process at watermark wm.
func (a *Aggregate[R, S]) place(tx *partition.Tx, key []byte, t int64, rec R, wm int64) error {
	if err := a.closeUpTo(tx, wm); err != nil {
		return err
	}
	var (
		placed bool
		err    error
	)
	switch {
	case a.session:
		placed, err = a.placeSession(tx, key, t, rec, wm)
	case a.panes > 0:
		placed, err = a.placePane(tx, key, t, rec, wm)
	default:
		placed, err = a.placeFixed(tx, key, t, rec, wm)
	}
	if err != nil {
		return err
	}
	if !placed {
		if err := a.countLate(tx); err != nil {
			return err
		}
		if a.cfg.Late != nil {
			l := LateRecord[R]{Key: key, EventTime: t, Value: rec, Watermark: wm}
			if err := a.cfg.Late(tx, l); err != nil {
				return err
			}
		}
	}
	if a.cfg.AllowedLateness == 0 {
		// Every window the record created or extended is open, End > wm: none is due.
		return nil
	}
	return a.closeUpTo(tx, wm)
}

// Advance moves the watermark without a record and closes the windows behind it. The
// engine calls it when time passes with no record (a processor's OnTick). With
// Config.Exchange it raises the watermark to the exchange watermark, but only once the
// processor has handled every record of its input (partition.Tx.InputCaughtUp): a record
// still waiting carries an older stamp and must be judged against it. With
// ProcessingTime it follows batch time; otherwise it only fires what the watermark
// already passed. An error must fail the caller's Tx.
func (a *Aggregate[R, S]) Advance(tx *partition.Tx) error {
	var (
		wm  int64
		err error
	)
	if a.cfg.Exchange != "" {
		up := int64(NoWatermark)
		if tx.InputCaughtUp() {
			up = tx.ExchangeWatermark(a.cfg.Exchange)
		}
		wm, err = a.wm.Raise(tx, up)
	} else {
		wm, err = a.wm.Advance(tx)
	}
	if err != nil {
		return err
	}
	return a.closeUpTo(tx, wm)
}

// closed reports whether a window ending at end takes no more records at watermark wm.
func (a *Aggregate[R, S]) closed(end, wm int64) bool { return end+a.cfg.AllowedLateness <= wm }
