package modules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"go.starlark.net/starlark"
)

// Declarations. A module declares what it offers in two top-level dicts:
//
//	procedures = {"app.add": add, "app.total": procedure(total, read_only = True)}
//	processors = {"app.count": processor(count, input = "clicks", emits = ["counts"])}
//
// A procedures value is a function of (tx, args) or procedure(fn, read_only = False,
// multi = False, doc = ""); a processors value is processor(fn, input, emits = [],
// start = "earliest" | "latest", doc = ""), fn a function of (tx, rec). Any other
// top-level name is the module's own.

// procDecl is the value procedure(...) returns.
type procDecl struct {
	fn              *starlark.Function
	readOnly, multi bool
	doc             string
}

// processorDecl is the value processor(...) returns.
type processorDecl struct {
	fn          *starlark.Function
	input, doc  string
	emits       []string
	startLatest bool
	ext         processorExt // Dialect2's additions (outputs, tick, window)
}

func (d *procDecl) String() string        { return fmt.Sprintf("procedure(%s)", d.fn.Name()) }
func (d *procDecl) Type() string          { return "procedure" }
func (d *procDecl) Freeze()               {}
func (d *procDecl) Truth() starlark.Bool  { return true }
func (d *procDecl) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: procedure") }

func (d *processorDecl) String() string        { return fmt.Sprintf("processor(%s)", d.fn.Name()) }
func (d *processorDecl) Type() string          { return "processor" }
func (d *processorDecl) Freeze()               {}
func (d *processorDecl) Truth() starlark.Bool  { return true }
func (d *processorDecl) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: processor") }

// declarationBuiltins are procedure and processor, as the dialect has them, and from
// Dialect2 the window specifications.
func declarationBuiltins(dialect int) starlark.StringDict {
	out := starlark.StringDict{
		"procedure": starlark.NewBuiltin("procedure", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			d := &procDecl{}
			if err := starlark.UnpackArgs("procedure", args, kwargs, "fn", &d.fn, "read_only?", &d.readOnly, "multi?", &d.multi, "doc?", &d.doc); err != nil {
				return nil, err
			}
			return d, nil
		}),
		"processor": starlark.NewBuiltin("processor", func(t *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			d := &processorDecl{}
			var emits starlark.Value = starlark.NewList(nil)
			start := "earliest"
			pairs := []any{"fn", &d.fn, "input", &d.input, "emits?", &emits, "start?", &start, "doc?", &d.doc}
			var ext extArgs
			if dialect >= Dialect2 {
				pairs = append(pairs, ext.pairs()...)
			}
			if err := starlark.UnpackArgs("processor", args, kwargs, pairs...); err != nil {
				return nil, err
			}
			var err error
			if d.emits, err = streamNames("processor: emits", emits); err != nil {
				return nil, err
			}
			switch start {
			case "earliest":
			case "latest":
				d.startLatest = true
			default:
				return nil, fmt.Errorf("processor: start is %q, want \"earliest\" or \"latest\"", start)
			}
			if d.ext, err = ext.check(budgetOf(t)); err != nil {
				return nil, err
			}
			return d, nil
		}),
	}
	if dialect >= Dialect2 {
		for k, v := range windowBuiltins() {
			out[k] = v
		}
	}
	return out
}

// streamNames reads a list of stream names.
func streamNames(what string, v starlark.Value) ([]string, error) {
	it, ok := v.(starlark.Iterable)
	if !ok {
		return nil, fmt.Errorf("%s is a %s, want a list of stream names", what, v.Type())
	}
	iter := it.Iterate()
	defer iter.Done()
	var out []string
	var x starlark.Value
	for iter.Next(&x) {
		s, ok := x.(starlark.String)
		if !ok {
			return nil, fmt.Errorf("%s holds a %s, want stream names", what, x.Type())
		}
		out = append(out, string(s))
	}
	return out, nil
}

// declare reads the module's declarations from its frozen globals.
func (m *Module) declare(g starlark.StringDict) error {
	existing := map[string]bool{}
	for _, n := range m.opts.Existing {
		existing[n] = true
	}
	seen := map[string]bool{}
	name := func(kind string, k starlark.Value) (string, error) {
		s, ok := k.(starlark.String)
		if !ok {
			return "", fmt.Errorf("%w: %s: %s key %s is not a string", ErrDeclaration, m.name, kind, k.Type())
		}
		n := string(s)
		if n == "" || len(n) > procedures.MaxNameBytes {
			return "", fmt.Errorf("%w: %s: %s name %q: 1 to %d bytes", ErrDeclaration, m.name, kind, n, procedures.MaxNameBytes)
		}
		if existing[n] {
			return "", fmt.Errorf("%w: %s: %s %s is built in", ErrRedefined, m.name, kind, n)
		}
		if seen[n] {
			return "", fmt.Errorf("%w: %s: %s declared twice", ErrRedefined, m.name, n)
		}
		seen[n] = true
		return n, nil
	}
	procs, err := declDict(m.name, g, "procedures")
	if err != nil {
		return err
	}
	procs2, err := declDict(m.name, g, "processors")
	if err != nil {
		return err
	}
	if procs == nil && procs2 == nil {
		return fmt.Errorf("%w: %s: declares neither procedures nor processors", ErrDeclaration, m.name)
	}
	for _, kv := range items(procs) {
		n, err := name("procedure", kv[0])
		if err != nil {
			return err
		}
		var d ProcedureDecl
		switch v := kv[1].(type) {
		case *starlark.Function:
			d = ProcedureDecl{Name: n, fn: v}
		case *procDecl:
			d = ProcedureDecl{Name: n, ReadOnly: v.readOnly, Multi: v.multi, Doc: v.doc, fn: v.fn}
		default:
			return fmt.Errorf("%w: %s: procedure %s is a %s, want a function or procedure(...)", ErrDeclaration, m.name, n, kv[1].Type())
		}
		if err := checkParams(m.name, "procedure", n, d.fn, "tx, args"); err != nil {
			return err
		}
		m.procs = append(m.procs, d)
	}
	for _, kv := range items(procs2) {
		n, err := name("processor", kv[0])
		if err != nil {
			return err
		}
		v, ok := kv[1].(*processorDecl)
		if !ok {
			return fmt.Errorf("%w: %s: processor %s is a %s, want processor(...)", ErrDeclaration, m.name, n, kv[1].Type())
		}
		d := ProcessorDecl{Name: n, Input: v.input, StartLatest: v.startLatest, Doc: v.doc, fn: v.fn, ext: v.ext}
		if err := m.checkExt(n, &d); err != nil {
			return err
		}
		emits := v.emits
		for _, o := range v.ext.outputs {
			emits = append(emits, o.Name)
		}
		d.Emits = slices.Compact(slices.Sorted(slices.Values(emits)))
		d.Outputs = slices.Clone(v.ext.outputs)
		d.Tick = v.ext.tick != nil || v.ext.window != nil
		d.Windowed = v.ext.window != nil
		if err := partition.ValidateProcessors([]partition.Processor{{Name: n, Input: d.Input, Emits: d.Emits, Outputs: d.Outputs,
			Process: func(*partition.Tx, partition.Record) error { return nil }}}); err != nil {
			return fmt.Errorf("%w: %s: processor %s: %w", ErrDeclaration, m.name, n, err)
		}
		m.processors = append(m.processors, d)
	}
	slices.SortFunc(m.procs, func(a, b ProcedureDecl) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(m.processors, func(a, b ProcessorDecl) int { return strings.Compare(a.Name, b.Name) })
	return nil
}

// declDict returns the global dict name, nil if there is none.
func declDict(module string, g starlark.StringDict, name string) (*starlark.Dict, error) {
	v, ok := g[name]
	if !ok {
		return nil, nil
	}
	d, ok := v.(*starlark.Dict)
	if !ok {
		return nil, fmt.Errorf("%w: %s: %s is a %s, want a dict", ErrDeclaration, module, name, v.Type())
	}
	return d, nil
}

func items(d *starlark.Dict) []starlark.Tuple {
	if d == nil {
		return nil
	}
	return d.Items()
}

// checkParams refuses a function that does not take exactly the parameters want (a
// comma-separated list).
func checkParams(module, kind, name string, fn *starlark.Function, want string) error {
	if n := strings.Count(want, ",") + 1; fn.NumParams() != n || fn.HasVarargs() || fn.HasKwargs() || fn.NumKwonlyParams() != 0 {
		return fmt.Errorf("%w: %s: %s %s: %s takes %d parameters, want (%s)", ErrDeclaration, module, kind, name, fn.Name(), fn.NumParams(), want)
	}
	return nil
}
