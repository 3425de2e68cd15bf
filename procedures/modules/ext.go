package modules

import (
	"fmt"
	"time"

	"github.com/lockstepdb/lockstep/partition"
	"go.starlark.net/starlark"
)

// Dialect2's processor arguments (Options.Dialect):
//
//	processor(fn, input, emits = [], start = "earliest", doc = "",
//	          outputs = [] | {name: {"max_records": n, "max_bytes": n, "max_age": "1h", "compact": False}},
//	          tick = None,
//	          window = None, init = None, merge = None, result = None, late = None, key = None)
//
// outputs are streams the processor emits to that the runtime creates for it, on every
// partition, once its input exists (procedures.Output; a list gives them the default
// configuration). tick is a function of (tx) the engine calls once per partition per
// processor phase, after the records, in a Tx of its own (procedures.OnTick): for work
// that waits for time to pass; an error undoes it and is dead-lettered as a Go hook's is.
// window (window.go) makes the processor a window aggregate.

// processorExt is what a Dialect2 processor declares beyond Dialect1.
type processorExt struct {
	outputs []partition.OutputStream
	tick    *starlark.Function
	window  *windowSpec
	init    []byte // the encoded initial window state
	merge   *starlark.Function
	result  *starlark.Function
	late    *starlark.Function
	key     *starlark.Function // the grouping key of a record; nil: its key
}

// extArgs are the Dialect2 arguments of processor(...) as given.
type extArgs struct {
	outputs, tick, window, init, merge, result, late, key starlark.Value
}

func (a *extArgs) pairs() []any {
	a.outputs, a.tick, a.window, a.init, a.merge, a.result, a.late, a.key = starlark.None, starlark.None, starlark.None,
		starlark.None, starlark.None, starlark.None, starlark.None, starlark.None
	return []any{"outputs?", &a.outputs, "tick?", &a.tick, "window?", &a.window, "init?", &a.init,
		"merge?", &a.merge, "result?", &a.result, "late?", &a.late, "key?", &a.key}
}

// check reads the arguments given (all None under Dialect1); b encodes init.
func (a *extArgs) check(b *budget) (processorExt, error) {
	var x processorExt
	if a.outputs == nil {
		return x, nil // Dialect1: pairs was not called
	}
	var err error
	if x.outputs, err = outputStreams(a.outputs); err != nil {
		return x, err
	}
	fns := []struct {
		name string
		v    starlark.Value
		to   **starlark.Function
	}{{"tick", a.tick, &x.tick}, {"merge", a.merge, &x.merge}, {"result", a.result, &x.result}, {"late", a.late, &x.late}, {"key", a.key, &x.key}}
	for _, f := range fns {
		if f.v == starlark.None {
			continue
		}
		fn, ok := f.v.(*starlark.Function)
		if !ok {
			return x, fmt.Errorf("processor: %s is a %s, want a function", f.name, f.v.Type())
		}
		*f.to = fn
	}
	if a.window != starlark.None {
		w, ok := a.window.(*windowSpec)
		if !ok {
			return x, fmt.Errorf("processor: window is a %s, want tumbling(...), hopping(...) or session(...)", a.window.Type())
		}
		x.window = w
		enc := encoder{b: b}
		if err := enc.encode(a.init, 0); err != nil {
			return x, fmt.Errorf("processor: init: %w", err)
		}
		x.init = enc.out
	} else if a.init != starlark.None || x.merge != nil || x.result != nil || x.late != nil || x.key != nil {
		return x, fmt.Errorf("processor: init, merge, result, late and key are for window aggregates (window = ...)")
	}
	return x, nil
}

// outputStreams reads outputs: a list of names or a dict of name → configuration.
func outputStreams(v starlark.Value) ([]partition.OutputStream, error) {
	if v == starlark.None {
		return nil, nil
	}
	d, ok := v.(*starlark.Dict)
	if !ok {
		names, err := streamNames("processor: outputs", v)
		if err != nil {
			return nil, err
		}
		out := make([]partition.OutputStream, len(names))
		for i, n := range names {
			out[i] = partition.OutputStream{Name: n}
		}
		return out, nil
	}
	var out []partition.OutputStream
	for _, kv := range d.Items() {
		name, ok := kv[0].(starlark.String)
		if !ok {
			return nil, fmt.Errorf("processor: outputs key is a %s, want a stream name", kv[0].Type())
		}
		o := partition.OutputStream{Name: string(name)}
		if kv[1] != starlark.None {
			cfg, ok := kv[1].(*starlark.Dict)
			if !ok {
				return nil, fmt.Errorf("processor: outputs[%q] is a %s, want a dict of max_records, max_bytes, max_age, compact", name, kv[1].Type())
			}
			if err := streamConfig(string(name), cfg, &o.Config); err != nil {
				return nil, err
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// streamConfig reads an output stream's configuration.
func streamConfig(name string, d *starlark.Dict, c *partition.StreamConfig) error {
	for _, kv := range d.Items() {
		k, _ := kv[0].(starlark.String)
		var err error
		switch k {
		case "max_records":
			err = starlark.AsInt(kv[1], &c.MaxRecords)
		case "max_bytes":
			err = starlark.AsInt(kv[1], &c.MaxBytes)
		case "max_age":
			c.MaxAgeMs, err = millis(kv[1])
		case "compact":
			b, ok := kv[1].(starlark.Bool)
			if !ok {
				err = fmt.Errorf("want a bool, not %s", kv[1].Type())
			}
			c.Compact = bool(b)
		default:
			return fmt.Errorf("processor: outputs[%q]: unknown setting %s (want max_records, max_bytes, max_age, compact)", name, kv[0])
		}
		if err != nil {
			return fmt.Errorf("processor: outputs[%q][%s]: %w", name, k, err)
		}
	}
	return nil
}

// millis reads a duration: an int of milliseconds or a string Go's time.ParseDuration
// reads ("10s", "1m30s", "250ms"), a whole number of milliseconds, at least 0.
func millis(v starlark.Value) (int64, error) {
	switch v := v.(type) {
	case starlark.Int:
		ms, ok := v.Int64()
		if !ok || ms < 0 {
			return 0, fmt.Errorf("duration %s: want 0 or more milliseconds", v)
		}
		return ms, nil
	case starlark.String:
		d, err := time.ParseDuration(string(v))
		if err != nil || d < 0 || d%time.Millisecond != 0 {
			return 0, fmt.Errorf("duration %q: want a duration such as \"10s\" or \"250ms\", whole milliseconds, at least 0", string(v))
		}
		return d.Milliseconds(), nil
	}
	return 0, fmt.Errorf("duration is a %s, want an int of milliseconds or a string such as \"10s\"", v.Type())
}

// checkExt checks a processor's Dialect2 declarations and builds its window operator.
func (m *Module) checkExt(n string, d *ProcessorDecl) error {
	x := &d.ext
	want := "tx, rec"
	if x.window != nil {
		want = "state, rec"
	}
	if err := checkParams(m.name, "processor", n, d.fn, want); err != nil {
		return err
	}
	params := []struct {
		fn   *starlark.Function
		want string
	}{{x.tick, "tx"}, {x.merge, "a, b"}, {x.result, "tx, r"}, {x.late, "tx, rec, watermark"}, {x.key, "rec"}}
	for _, p := range params {
		if p.fn != nil {
			if err := checkParams(m.name, "processor", n, p.fn, p.want); err != nil {
				return err
			}
		}
	}
	if x.window == nil {
		return nil
	}
	if x.result == nil {
		return fmt.Errorf("%w: %s: processor %s: a window aggregate needs result = fn(tx, r)", ErrDeclaration, m.name, n)
	}
	if x.window.session() != (x.merge != nil) {
		return fmt.Errorf("%w: %s: processor %s: merge = fn(a, b) is for, and required by, session windows", ErrDeclaration, m.name, n)
	}
	op, err := newWindowOp(m, n, d)
	if err != nil {
		return fmt.Errorf("%w: %s: processor %s: %w", ErrDeclaration, m.name, n, err)
	}
	d.agg = op
	return nil
}
