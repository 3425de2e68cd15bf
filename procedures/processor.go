package procedures

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lockstepdb/lockstep/partition"
)

// Processor registration. A processor is Go code bound to an input stream: the engine
// runs it on every partition after each log entry's inputs, over the partition's records
// of the stream in offset order, each record in its own transaction (partition.Processor,
// partition.Engine.RunProcessors, docs/streams.md). A processor bound to a stream that
// does not exist yet waits for it: streams are created through the log, so that can only
// be known at run time, and the status reports it as waiting.

// Errors of RegisterProcessor; the registry is unchanged after each.
var (
	// ErrProcessorCycle is returned when a processor would close a cycle among the
	// processors through their input and declared output streams (a processor emitting
	// to its own input is one).
	ErrProcessorCycle = errors.New("processor cycle")
	// ErrDuplicateProcessor is returned when a processor name is registered twice.
	ErrDuplicateProcessor = errors.New("processor already registered")
	// ErrBadProcessor is returned for a bad processor name, stream name or function.
	ErrBadProcessor = errors.New("bad processor definition")
)

// ProcessorInfo describes a registered processor.
type ProcessorInfo struct {
	// Name names the processor (its state is kept under it).
	Name string
	// Input is the stream it consumes.
	Input string
	// Emits lists the streams it may emit or append to, sorted.
	Emits []string
	// Outputs are the streams of Emits the runtime creates for it (see Output), by name.
	Outputs []partition.OutputStream
	// StartLatest: it starts at the stream's next offset when it first sees the stream,
	// not at its first offset.
	StartLatest bool
	// Doc is a one-line description.
	Doc string
	// Tick reports whether it has an OnTick hook.
	Tick bool
	// Windows names the window operators (window.Config.Name) it runs, sorted, whose
	// watermark and late count the node reports with the processor (see WindowOperators).
	Windows []string
}

// ProcessorOption changes how a processor is registered.
type ProcessorOption func(*processorEntry)

type processorEntry struct {
	info   ProcessorInfo
	fn     func(*partition.Tx, partition.Record) error // the lowest version's
	onTick func(*partition.Tx) error
	// versions are the registered versions' code, by version (versions.go); they share
	// the definition in info.
	versions map[uint32]ProcessorCode
}

// ProcessorCode is the code of one version of a processor.
type ProcessorCode struct {
	Process func(*partition.Tx, partition.Record) error
	OnTick  func(*partition.Tx) error
}

// StartEarliest starts the processor at the first offset its stream still holds when it
// first sees the stream (the default).
func StartEarliest() ProcessorOption { return func(e *processorEntry) { e.info.StartLatest = false } }

// StartLatest starts the processor at its stream's next offset when it first sees the
// stream: it handles only records appended afterwards.
func StartLatest() ProcessorOption { return func(e *processorEntry) { e.info.StartLatest = true } }

// Emits declares the streams the processor may emit (Tx.Emit) or append (Tx.Append) to;
// writing any other stream fails the record (partition.ErrUndeclaredStream).
func Emits(streams ...string) ProcessorOption {
	return func(e *processorEntry) { e.info.Emits = append(e.info.Emits, streams...) }
}

// Output declares a stream the processor emits or appends to (as Emits does) and that the
// runtime creates for it with cfg, through the log, on every partition: at the first
// processor phase in which the processor's input stream exists and the output does not
// (partition.OutputStream). So a pipeline needs only its input created; its records do not
// go to dead letters until someone creates the outputs by hand. A stream created
// beforehand keeps its own configuration. Registration fails with ErrBadProcessor for a bad
// name or configuration, or one that another processor declares with a different cfg.
func Output(name string, cfg partition.StreamConfig) ProcessorOption {
	return func(e *processorEntry) {
		e.info.Emits = append(e.info.Emits, name)
		e.info.Outputs = append(e.info.Outputs, partition.OutputStream{Name: name, Config: cfg})
	}
}

// ProcessorDoc sets the processor's one-line description.
func ProcessorDoc(text string) ProcessorOption { return func(e *processorEntry) { e.info.Doc = text } }

// OnTick sets a hook the engine calls once per partition per processor phase, in a Tx of
// its own, after the partition's records: for work that waits for time to pass, such as
// window.Aggregate.Advance. An error undoes its effects.
func OnTick(fn func(tx *partition.Tx) error) ProcessorOption {
	return func(e *processorEntry) { e.onTick = fn }
}

// WindowOperators declares the window operators (window.Aggregate, by Config.Name) the
// processor runs, so that the node reports each one's watermark and late-record count with
// the processor's status per partition (lockstep processors, Prometheus). The runtime
// cannot tell which tables a processor's code uses; this declaration says it. It only
// reports: it changes nothing the processor does, and is not part of the registry's
// fingerprint. An operator named here that the processor does not run reports no
// watermark.
func WindowOperators(names ...string) ProcessorOption {
	return func(e *processorEntry) { e.info.Windows = append(e.info.Windows, names...) }
}

// RegisterProcessor adds a processor named name consuming the stream input. fn handles
// one record in its own transaction: its table writes, emitted records and the
// processor's new position commit together; an error or panic undoes them and the record
// goes to the dead-letter stream input+".dead". fn must be deterministic like a
// procedure. It refuses a duplicate name (ErrDuplicateProcessor), bad names
// (ErrBadProcessor) and a cycle among processors (ErrProcessorCycle).
//
// name may carry a version, "name@N" (docs/procedures.md, Deploying and upgrading): the
// versions of one processor share its name, input, outputs, start and tick hook (else
// ErrBadProcessor), and differ only in their code.
func RegisterProcessor(r *Registry, name, input string, fn func(tx *partition.Tx, rec partition.Record) error, opts ...ProcessorOption) error {
	base, version, err := ParseVersioned(name)
	if err != nil {
		return fmt.Errorf("%w: processor %q: %w", ErrBadProcessor, name, err)
	}
	name = base
	e := &processorEntry{info: ProcessorInfo{Name: name, Input: input}, fn: fn}
	for _, o := range opts {
		o(e)
	}
	slices.Sort(e.info.Emits)
	e.info.Emits = slices.Compact(e.info.Emits)
	e.info.Tick = e.onTick != nil
	slices.Sort(e.info.Windows)
	e.info.Windows = slices.Compact(e.info.Windows)
	slices.SortStableFunc(e.info.Outputs, func(a, b partition.OutputStream) int { return strings.Compare(a.Name, b.Name) })
	if fn == nil || len(name) == 0 || len(name) > MaxNameBytes {
		return fmt.Errorf("%w: processor %q", ErrBadProcessor, name)
	}
	if old, ok := r.processors[name]; ok {
		return old.addVersion(e, version)
	}
	for _, w := range e.info.Windows {
		if w == "" || len(w)+len(".close") > partition.MaxNameBytes {
			return fmt.Errorf("%w: processor %s: window operator %q", ErrBadProcessor, name, w)
		}
	}
	if path := r.cycleThrough(e); path != nil {
		return fmt.Errorf("%w: %v", ErrProcessorCycle, path)
	}
	if err := partition.ValidateProcessors(append(r.Processors(), e.partition())); err != nil {
		return fmt.Errorf("%w: %w", ErrBadProcessor, err)
	}
	if r.processors == nil {
		r.processors = map[string]*processorEntry{}
	}
	e.versions = map[uint32]ProcessorCode{version: {Process: fn, OnTick: e.onTick}}
	r.processors[name] = e
	return nil
}

// addVersion adds the code of e as version v of the processor old, whose definition e
// must share.
func (old *processorEntry) addVersion(e *processorEntry, v uint32) error {
	if _, dup := old.versions[v]; dup {
		return fmt.Errorf("%w: %s", ErrDuplicateProcessor, VersionKey(e.info.Name, v))
	}
	a, b := old.info, e.info
	if a.Input != b.Input || !slices.Equal(a.Emits, b.Emits) || !slices.Equal(a.Outputs, b.Outputs) ||
		a.StartLatest != b.StartLatest || a.Tick != b.Tick || !slices.Equal(a.Windows, b.Windows) {
		return fmt.Errorf("%w: processor %s: its versions must share input, emitted streams, outputs, start, tick hook and window operators",
			ErrBadProcessor, VersionKey(e.info.Name, v))
	}
	old.versions[v] = ProcessorCode{Process: e.fn, OnTick: e.onTick}
	if low := slices.Min(slices.Collect(maps.Keys(old.versions))); low == v {
		old.fn, old.onTick = e.fn, e.onTick
	}
	return nil
}

// MustRegisterProcessor is RegisterProcessor for processor sets fixed at compile time;
// it panics on error.
func MustRegisterProcessor(r *Registry, name, input string, fn func(tx *partition.Tx, rec partition.Record) error, opts ...ProcessorOption) {
	if err := RegisterProcessor(r, name, input, fn, opts...); err != nil {
		panic(err)
	}
}

func (e *processorEntry) partition() partition.Processor {
	return partition.Processor{Name: e.info.Name, Input: e.info.Input, Emits: e.info.Emits, Outputs: e.info.Outputs,
		StartLatest: e.info.StartLatest, Process: e.fn, OnTick: e.onTick}
}

// cycleThrough returns the streams of a cycle the new processor e would close in the
// graph whose edges go from each processor's input to each stream it emits, or nil.
func (r *Registry) cycleThrough(e *processorEntry) []string {
	next := map[string][]string{}
	for _, p := range r.processors {
		next[p.info.Input] = append(next[p.info.Input], p.info.Emits...)
	}
	next[e.info.Input] = append(next[e.info.Input], e.info.Emits...)
	// A cycle through a new edge input → out exists iff input is reachable from out.
	for _, out := range e.info.Emits {
		if path := findPath(next, out, e.info.Input, map[string]bool{}); path != nil {
			return append([]string{e.info.Input}, path...)
		}
	}
	return nil
}

// findPath returns a path of streams from → … → to, or nil.
func findPath(next map[string][]string, from, to string, seen map[string]bool) []string {
	if from == to {
		return []string{to}
	}
	if seen[from] {
		return nil
	}
	seen[from] = true
	for _, n := range next[from] {
		if p := findPath(next, n, to, seen); p != nil {
			return append([]string{from}, p...)
		}
	}
	return nil
}

// Processors returns the registered processors as the engine runs them, by name.
func (r *Registry) Processors() []partition.Processor {
	out := make([]partition.Processor, 0, len(r.processors))
	for _, info := range r.ListProcessors() {
		out = append(out, r.processors[info.Name].partition())
	}
	return out
}

// ListProcessors describes every registered processor, by name.
func (r *Registry) ListProcessors() []ProcessorInfo {
	out := make([]ProcessorInfo, 0, len(r.processors))
	for _, e := range r.processors {
		info := e.info
		info.Emits = slices.Clone(info.Emits)
		info.Windows = slices.Clone(info.Windows)
		info.Outputs = slices.Clone(info.Outputs)
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b ProcessorInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}
