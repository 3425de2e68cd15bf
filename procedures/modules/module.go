package modules

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Errors of Compile and of running a module's code. Each is returned wrapped with
// context; test with errors.Is.
var (
	// ErrCompile is returned for a module that does not parse or resolve, or whose
	// top-level code fails; the message starts with file:line:col.
	ErrCompile = errors.New("module does not compile")
	// ErrDeclaration is returned for a bad procedures or processors declaration: not a
	// dict, a bad name, a value that is not a function or declaration, a function with
	// the wrong parameters, a bad stream name.
	ErrDeclaration = errors.New("bad module declaration")
	// ErrRedefined is returned when a module defines a procedure or processor name that
	// Options.Existing holds (a built-in), or one name twice.
	ErrRedefined = errors.New("name already defined")
	// ErrBadOptions is returned for Options out of range.
	ErrBadOptions = errors.New("bad module options")
	// ErrLimitExceeded is matched by every LimitError: a run went past its step,
	// element, byte, int or depth budget.
	ErrLimitExceeded = errors.New("module limit exceeded")
	// ErrRaised is returned when a module's code fails (fail(), a Starlark error such
	// as a bad index or a type error, or an error of the tx); the message is
	// file:line:col: in function: error, identical on every replica.
	ErrRaised = errors.New("module code failed")
	// ErrValue is returned for a value that does not encode or decode (a set, an int
	// past 64 bits, bytes that are not msgpack).
	ErrValue = errors.New("module value cannot be converted")
)

// Module is a compiled module: its frozen globals and its declared procedures and
// processors. It is immutable and safe for concurrent use: each call runs in a thread
// of its own, and frozen globals cannot be changed by any call.
type Module struct {
	name       string
	opts       Options
	procs      []ProcedureDecl
	processors []ProcessorDecl
}

// ProcedureDecl is a procedure a module declares.
type ProcedureDecl struct {
	// Name is the name it is invoked by.
	Name string
	// ReadOnly, Multi and Doc are as procedures.Info's.
	ReadOnly, Multi bool
	Doc             string
	fn              *starlark.Function
}

// ProcessorDecl is a processor a module declares.
type ProcessorDecl struct {
	// Name, Input, Emits, Outputs, StartLatest and Doc are as procedures.ProcessorInfo's
	// (Emits includes Outputs).
	Name, Input string
	Emits       []string
	Outputs     []partition.OutputStream
	StartLatest bool
	Doc         string
	// Tick reports whether the processor has a tick hook: its own (tick = fn) or its
	// window's (window = ..., which advances the window on every tick).
	Tick bool
	// Windowed reports whether it is a window aggregate (window = ...): fn folds
	// records into window states, results go to its result function.
	Windowed bool
	fn       *starlark.Function
	ext      processorExt
	agg      *windowOp // the window operator of a Windowed processor
}

// Name returns the module's file name.
func (m *Module) Name() string { return m.name }

// Procedures returns the declared procedures, by name.
func (m *Module) Procedures() []ProcedureDecl { return slices.Clone(m.procs) }

// Processors returns the declared processors, by name.
func (m *Module) Processors() []ProcessorDecl {
	out := slices.Clone(m.processors)
	for i := range out {
		out[i].Emits = slices.Clone(out[i].Emits)
		out[i].Outputs = slices.Clone(out[i].Outputs)
	}
	return out
}

// fileOptions are the dialect modules are written in: while loops and sets allowed;
// no recursion, no top-level control flow or global reassignment (Starlark's defaults).
var fileOptions = syntax.FileOptions{While: true, Set: true}

// Compile parses, checks and initialises the module source, named name (its file name
// in messages), under opts. The result depends only on name, source, opts and the
// interpreter version, so every replica compiles the same module from the same bytes.
func Compile(name string, source []byte, opts Options) (*Module, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	fopts := fileOptions
	f, err := fopts.Parse(name, source, 0)
	if err != nil {
		return nil, compileError(err)
	}
	for _, s := range f.Stmts {
		if _, ok := s.(*syntax.LoadStmt); ok {
			start, _ := s.Span()
			return nil, fmt.Errorf("%w: %s: load is not available in a module", ErrCompile, start)
		}
	}
	(&rewriter{}).file(f)
	pre := runtimePredeclared()
	for k, v := range declarationBuiltins(opts.Dialect) {
		pre[k] = v
	}
	prog, err := starlark.FileProgram(f, pre.Has)
	if err != nil {
		return nil, compileError(err)
	}
	m := &Module{name: name, opts: opts}
	s := newRun(&m.opts, name)
	defer s.done()
	globals, err := prog.Init(&s.thread, pre)
	if err != nil {
		return nil, fmt.Errorf("%w: top-level code: %w", ErrCompile, m.runError(&s.budget, "<toplevel>", err))
	}
	globals.Freeze()
	if err := m.declare(globals); err != nil {
		return nil, err
	}
	return m, nil
}

// compileError turns a parse or resolve error into ErrCompile with its position.
func compileError(err error) error {
	var se syntax.Error
	if errors.As(err, &se) {
		return fmt.Errorf("%w: %s: %s", ErrCompile, se.Pos, se.Msg)
	}
	var list resolve.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		return fmt.Errorf("%w: %s: %s", ErrCompile, list[0].Pos, list[0].Msg)
	}
	return fmt.Errorf("%w: %v", ErrCompile, err)
}

// runError is the error of a run of fn that failed with err: the position of the
// innermost line of the module's code on the stack, then the limit or the message.
func (m *Module) runError(b *budget, fn string, err error) error {
	where := ""
	var ev *starlark.EvalError
	msg := err.Error()
	if errors.As(err, &ev) {
		msg = ev.Msg
		for i := range ev.CallStack {
			if fr := ev.CallStack.At(i); fr.Pos.IsValid() && fr.Pos.Filename() != "<builtin>" {
				where = fmt.Sprintf("%s: in %s: ", fr.Pos, fr.Name)
				break
			}
		}
	}
	if where == "" {
		where = fmt.Sprintf("%s: in %s: ", m.name, fn)
	}
	if b.err != nil {
		return fmt.Errorf("%s%w", where, b.err)
	}
	if errors.Is(err, ErrValue) {
		return fmt.Errorf("%w: %w: %s%s", ErrRaised, ErrValue, where, msg)
	}
	return fmt.Errorf("%w: %s%s", ErrRaised, where, msg)
}

// Call runs the declared procedure name with msgpack arguments args (empty: None) and
// returns its msgpack result.
func (m *Module) Call(tx *partition.Tx, name string, args []byte) ([]byte, error) {
	i, ok := slices.BinarySearchFunc(m.procs, name, func(p ProcedureDecl, n string) int { return strings.Compare(p.Name, n) })
	if !ok {
		return nil, fmt.Errorf("%w: %q", procedures.ErrUnknownProcedure, name)
	}
	fn := m.procs[i].fn
	s := newRun(&m.opts, name)
	defer s.done()
	var a starlark.Value = starlark.None
	if len(args) > 0 {
		v, err := decodeValue(&s.budget, args)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", procedures.ErrBadArguments, err)
		}
		a = v
	}
	s.tx.tx = tx
	v, err := starlark.Call(&s.thread, fn, starlark.Tuple{&s.tx, a}, nil)
	if err != nil {
		return nil, m.runError(&s.budget, fn.Name(), err)
	}
	enc := encoder{b: &s.budget}
	if err := enc.encode(v, 0); err != nil {
		return nil, fmt.Errorf("%s: in %s: result: %w", m.name, fn.Name(), err)
	}
	return enc.out, nil
}

// Process runs the declared processor name on rec: its function, or for a window
// aggregate the window operator (window.go).
func (m *Module) Process(tx *partition.Tx, name string, rec partition.Record) error {
	d, err := m.processor(name)
	if err != nil {
		return err
	}
	s := newRun(&m.opts, name)
	defer s.done()
	s.tx.tx = tx
	s.rec = recordValue{rec: rec, b: &s.budget}
	if d.agg != nil {
		return d.agg.process(s, tx)
	}
	if _, err := starlark.Call(&s.thread, d.fn, starlark.Tuple{&s.tx, &s.rec}, nil); err != nil {
		return m.runError(&s.budget, d.fn.Name(), err)
	}
	return nil
}

// Tick runs the tick of the declared processor name: its window's Advance, then its
// tick hook, each if it has one, under one step budget.
func (m *Module) Tick(tx *partition.Tx, name string) error {
	d, err := m.processor(name)
	if err != nil {
		return err
	}
	s := newRun(&m.opts, name)
	defer s.done()
	s.tx.tx = tx
	if d.agg != nil {
		if err := d.agg.advance(s, tx); err != nil {
			return err
		}
		s.tx.tx = tx
	}
	if fn := d.ext.tick; fn != nil {
		if _, err := starlark.Call(&s.thread, fn, starlark.Tuple{&s.tx}, nil); err != nil {
			return m.runError(&s.budget, fn.Name(), err)
		}
	}
	return nil
}

func (m *Module) processor(name string) (*ProcessorDecl, error) {
	i, ok := slices.BinarySearchFunc(m.processors, name, func(p ProcessorDecl, n string) int { return strings.Compare(p.Name, n) })
	if !ok {
		return nil, fmt.Errorf("%w: processor %q", ErrDeclaration, name)
	}
	return &m.processors[i], nil
}

// Register registers the module's procedures (raw msgpack arguments and results,
// procedures.RegisterRaw) and processors (with their declared input and emitted streams,
// the outputs the runtime creates, their tick hooks and window operators) in r. It stops at the first refusal, which it returns; the procedures and processors
// registered before it stay.
func (m *Module) Register(r *procedures.Registry) error {
	for _, p := range m.procs {
		opts := []procedures.Option{procedures.Doc(p.Doc)}
		if p.ReadOnly {
			opts = append(opts, procedures.ReadOnly())
		}
		if p.Multi {
			opts = append(opts, procedures.MultiPartition())
		}
		name := p.Name
		if err := procedures.RegisterRaw(r, name, func(tx *partition.Tx, args []byte) ([]byte, error) {
			return m.Call(tx, name, args)
		}, opts...); err != nil {
			return err
		}
	}
	for _, p := range m.processors {
		opts := []procedures.ProcessorOption{procedures.Emits(p.Emits...), procedures.ProcessorDoc(p.Doc)}
		if p.StartLatest {
			opts = append(opts, procedures.StartLatest())
		}
		for _, o := range p.Outputs {
			opts = append(opts, procedures.Output(o.Name, o.Config))
		}
		name := p.Name
		if p.Tick {
			opts = append(opts, procedures.OnTick(func(tx *partition.Tx) error { return m.Tick(tx, name) }))
		}
		if p.Windowed {
			opts = append(opts, procedures.WindowOperators(name))
		}
		if err := procedures.RegisterProcessor(r, name, p.Input, func(tx *partition.Tx, rec partition.Record) error {
			return m.Process(tx, name, rec)
		}, opts...); err != nil {
			return err
		}
	}
	return nil
}
