package modules

import (
	"fmt"
	"slices"
	"sync"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/window"
	"github.com/vmihailenco/msgpack/v5"
	"go.starlark.net/starlark"
)

// Window aggregates (Dialect2). A processor declared with a window specification
//
//	def add(state, rec):            # fold one record into a window's state
//	    return state + 1
//	def result(tx, r):              # r.key, r.start, r.end, r.value, r.revision, r.final, r.retracted
//	    tx.emit("counts", r.key, {"start": r.start, "n": r.value}, r.end)
//	def late(tx, rec, watermark):   # a record that fell in no open window
//	    tx.emit("clicks.late", rec.key, rec.value, rec.time)
//	processors = {"app.per10s": processor(add, input = "clicks",
//	    window = tumbling("10s", out_of_order = "5s", lateness = "1m"),
//	    init = 0, result = result, late = late, outputs = ["counts", "clicks.late"])}
//
// runs procedures/window's operator (window.Aggregate), the one Go processors use: the
// same watermark, firing, lateness, revisions and state tables (named after the
// processor: NAME.wm, NAME.win, NAME.fire, NAME.close), keyed by the record's key, or by
// what key(rec) returns (str or bytes; None leaves the record out of every window). States
// are the module's values, stored in the module's canonical encoding; each window starts
// at init. add(state, rec) runs for each window the record falls in, merge(a, b) (session
// windows only) when sessions merge; result(tx, r) gets every result (each revision and
// the final one; results = "final" gives only the final ones), late(tx, rec, watermark)
// every late record (default: dropped, counted). The processor's tick advances the
// window (window.Aggregate.Advance), then runs its own tick hook, if any. All of a
// record's calls share its step budget, and an error in any of them fails the record.
//
// Window specifications, durations in int milliseconds or strings such as "10s":
//
//	tumbling(size, out_of_order = 0, lateness = 0, processing_time = False, results = "all")
//	hopping(size, slide, ...the same)
//	session(gap, ...the same)
//
// out_of_order is the watermark's allowed disorder, lateness how long past its end a
// window takes records (window.Config); processing_time puts records in windows by batch
// time instead of their event time.

// windowSpec is the value tumbling, hopping and session return.
type windowSpec struct {
	kind           string
	assigner       window.Assigner
	outOfOrder     int64
	lateness       int64
	processingTime bool
	finalOnly      bool
}

func (w *windowSpec) String() string        { return fmt.Sprintf("%s(%v)", w.kind, w.assigner) }
func (w *windowSpec) Type() string          { return "window" }
func (w *windowSpec) Freeze()               {}
func (w *windowSpec) Truth() starlark.Bool  { return true }
func (w *windowSpec) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: window") }
func (w *windowSpec) session() bool         { _, ok := w.assigner.(window.Session); return ok }

// windowBuiltins are tumbling, hopping and session.
func windowBuiltins() starlark.StringDict {
	spec := func(kind string, sizes ...string) *starlark.Builtin {
		return starlark.NewBuiltin(kind, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			vals := make([]starlark.Value, len(sizes))
			var ooo, late starlark.Value = starlark.MakeInt(0), starlark.MakeInt(0)
			results := "all"
			w := &windowSpec{kind: kind}
			var pairs []any
			for i, s := range sizes {
				pairs = append(pairs, s, &vals[i])
			}
			pairs = append(pairs, "out_of_order?", &ooo, "lateness?", &late, "processing_time?", &w.processingTime, "results?", &results)
			if err := starlark.UnpackArgs(kind, args, kwargs, pairs...); err != nil {
				return nil, err
			}
			ms := make([]int64, len(sizes))
			for i := range vals {
				var err error
				if ms[i], err = millis(vals[i]); err != nil {
					return nil, fmt.Errorf("%s: %s: %w", kind, sizes[i], err)
				}
			}
			var err error
			if w.outOfOrder, err = millis(ooo); err != nil {
				return nil, fmt.Errorf("%s: out_of_order: %w", kind, err)
			}
			if w.lateness, err = millis(late); err != nil {
				return nil, fmt.Errorf("%s: lateness: %w", kind, err)
			}
			switch results {
			case "all":
			case "final":
				w.finalOnly = true
			default:
				return nil, fmt.Errorf("%s: results is %q, want \"all\" or \"final\"", kind, results)
			}
			switch kind {
			case "tumbling":
				w.assigner = window.Tumbling{Size: ms[0]}
			case "hopping":
				w.assigner = window.Hopping{Size: ms[0], Slide: ms[1]}
			default:
				w.assigner = window.Session{Gap: ms[0]}
			}
			return w, nil
		})
	}
	return starlark.StringDict{
		"tumbling": spec("tumbling", "size"),
		"hopping":  spec("hopping", "size", "slide"),
		"session":  spec("session", "gap"),
	}
}

// windowOp is a windowed processor's operator. window.Aggregate's callbacks cannot return
// an error (Add, Merge) or see the call (all of them), and one Aggregate serves every
// partition at once: so each call takes a windowRun from a pool, whose Aggregate's
// callbacks are bound to it, and points it at the call.
type windowOp struct {
	m    *Module
	fn   *starlark.Function // add(state, rec)
	ext  *processorExt
	pool sync.Pool // of *windowRun
}

// windowRun is one call's view of the operator.
type windowRun struct {
	op  *windowOp
	agg *window.Aggregate[*recordValue, msgpack.RawMessage]
	s   *runState // the call's
	err error     // the first error of a callback, which fails the call
}

func newWindowOp(m *Module, name string, d *ProcessorDecl) (*windowOp, error) {
	ext := d.ext
	op := &windowOp{m: m, fn: d.fn, ext: &ext}
	if _, err := op.newRun(name); err != nil {
		return nil, err
	}
	op.pool.New = func() any {
		r, err := op.newRun(name)
		if err != nil {
			panic(fmt.Sprintf("modules: window operator %s: configuration checked at compile fails: %v", name, err))
		}
		return r
	}
	return op, nil
}

// newRun builds a windowRun with an Aggregate bound to it.
func (op *windowOp) newRun(name string) (*windowRun, error) {
	w := op.ext.window
	r := &windowRun{op: op}
	cfg := window.Config[*recordValue, msgpack.RawMessage]{
		Name:            name,
		Assigner:        w.assigner,
		OutOfOrderness:  w.outOfOrder,
		ProcessingTime:  w.processingTime,
		AllowedLateness: w.lateness,
		Init:            func() msgpack.RawMessage { return op.ext.init },
		Add:             r.add,
		Emit:            r.emit,
	}
	if op.ext.merge != nil {
		cfg.Merge = r.merge
	}
	if op.ext.late != nil {
		cfg.Late = r.late
	}
	agg, err := window.New(cfg)
	if err != nil {
		return nil, err
	}
	r.agg = agg
	return r, nil
}

// start binds a run of the operator to the call s.
func (op *windowOp) start(s *runState) *windowRun {
	r := op.pool.Get().(*windowRun)
	r.s, r.err = s, nil
	return r
}

func (r *windowRun) done() {
	r.s, r.err = nil, nil
	r.op.pool.Put(r)
}

// fail records the first error of a callback of fn.
func (r *windowRun) fail(fn *starlark.Function, err error) {
	if r.err == nil {
		r.err = r.op.m.runError(&r.s.budget, fn.Name(), err)
	}
}

// call calls fn with args and encodes its result as a window state.
func (r *windowRun) fold(fn *starlark.Function, args ...starlark.Value) (msgpack.RawMessage, bool) {
	v, err := starlark.Call(&r.s.thread, fn, args, nil)
	if err != nil {
		r.fail(fn, err)
		return nil, false
	}
	enc := encoder{b: &r.s.budget}
	if err := enc.encode(v, 0); err != nil {
		r.err = fmt.Errorf("%s: in %s: state: %w", r.op.m.name, fn.Name(), err)
		return nil, false
	}
	return enc.out, true
}

func (r *windowRun) state(fn *starlark.Function, raw msgpack.RawMessage) (starlark.Value, bool) {
	v, err := decodeValue(&r.s.budget, raw)
	if err != nil {
		r.err = fmt.Errorf("%s: in %s: state: %w", r.op.m.name, fn.Name(), err)
		return nil, false
	}
	return v, true
}

// add is the Aggregate's Add: the module's fn(state, rec).
func (r *windowRun) add(st msgpack.RawMessage, rec *recordValue) msgpack.RawMessage {
	if r.err != nil {
		return st
	}
	fn := r.op.fn
	v, ok := r.state(fn, st)
	if !ok {
		return st
	}
	if out, ok := r.fold(fn, v, rec); ok {
		return out
	}
	return st
}

// merge is the Aggregate's Merge: the module's merge(a, b).
func (r *windowRun) merge(a, b msgpack.RawMessage) msgpack.RawMessage {
	if r.err != nil {
		return a
	}
	fn := r.op.ext.merge
	av, ok := r.state(fn, a)
	if !ok {
		return a
	}
	bv, ok := r.state(fn, b)
	if !ok {
		return a
	}
	if out, ok := r.fold(fn, av, bv); ok {
		return out
	}
	return a
}

// emit is the Aggregate's Emit: the module's result(tx, r).
func (r *windowRun) emit(tx *partition.Tx, res window.Result[msgpack.RawMessage]) error {
	if r.err != nil {
		return r.err
	}
	if r.op.ext.window.finalOnly && !res.Final {
		return nil
	}
	r.s.tx.tx = tx
	fn := r.op.ext.result
	rv := &resultValue{res: res, b: &r.s.budget}
	if _, err := starlark.Call(&r.s.thread, fn, starlark.Tuple{&r.s.tx, rv}, nil); err != nil {
		r.fail(fn, err)
		return r.err
	}
	return nil
}

// late is the Aggregate's Late: the module's late(tx, rec, watermark).
func (r *windowRun) late(tx *partition.Tx, l window.LateRecord[*recordValue]) error {
	if r.err != nil {
		return r.err
	}
	r.s.tx.tx = tx
	fn := r.op.ext.late
	if _, err := starlark.Call(&r.s.thread, fn, starlark.Tuple{&r.s.tx, l.Value, starlark.MakeInt64(l.Watermark)}, nil); err != nil {
		r.fail(fn, err)
		return r.err
	}
	return nil
}

// process runs the operator on the call's record.
func (op *windowOp) process(s *runState, tx *partition.Tx) error {
	r := op.start(s)
	defer r.done()
	t := s.rec.rec.EventTime
	if op.ext.window.processingTime {
		t = window.BatchTime(tx)
	}
	key := s.rec.rec.Key
	if fn := op.ext.key; fn != nil {
		v, err := starlark.Call(&s.thread, fn, starlark.Tuple{&s.rec}, nil)
		if err != nil {
			return op.m.runError(&s.budget, fn.Name(), err)
		}
		if v == starlark.None {
			return nil // not for any window
		}
		if key, err = keyBytes(fn.Name(), v); err != nil {
			return fmt.Errorf("%w: %s: in %s: %w", ErrRaised, op.m.name, fn.Name(), err)
		}
	}
	err := r.agg.Process(tx, key, t, &s.rec)
	if r.err != nil {
		return r.err
	}
	return err
}

// advance runs the operator's Advance on a tick.
func (op *windowOp) advance(s *runState, tx *partition.Tx) error {
	r := op.start(s)
	defer r.done()
	err := r.agg.Advance(tx)
	if r.err != nil {
		return r.err
	}
	return err
}

// resultValue is the Starlark value of a window result: key (str), start, end,
// value (the state, decoded when first read), revision, final, retracted.
type resultValue struct {
	res     window.Result[msgpack.RawMessage]
	b       *budget
	decoded starlark.Value
}

var resultFields = []string{"end", "final", "key", "retracted", "revision", "start", "value"}

func (r *resultValue) String() string {
	return fmt.Sprintf("<window %q [%d,%d) #%d>", r.res.Key, r.res.Start, r.res.End, r.res.Revision)
}
func (r *resultValue) Type() string          { return "window_result" }
func (r *resultValue) Freeze()               {}
func (r *resultValue) Truth() starlark.Bool  { return true }
func (r *resultValue) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: window_result") }
func (r *resultValue) AttrNames() []string   { return slices.Clone(resultFields) }

// Attr returns the field name.
func (r *resultValue) Attr(name string) (starlark.Value, error) {
	switch name {
	case "key":
		return lent(r.res.Key), nil
	case "start":
		return starlark.MakeInt64(r.res.Start), nil
	case "end":
		return starlark.MakeInt64(r.res.End), nil
	case "revision":
		return starlark.MakeInt(r.res.Revision), nil
	case "final":
		return starlark.Bool(r.res.Final), nil
	case "retracted":
		return starlark.Bool(r.res.Retracted), nil
	case "value":
		if r.decoded == nil {
			v, err := decodeValue(r.b, r.res.Value)
			if err != nil {
				return nil, fmt.Errorf("window result: %w", err)
			}
			r.decoded = v
		}
		return r.decoded, nil
	}
	return nil, fmt.Errorf("window_result has no .%s field", name)
}
