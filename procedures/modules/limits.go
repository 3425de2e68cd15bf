package modules

import (
	"errors"
	"fmt"
	"sync"

	"github.com/lockstepdb/lockstep/partition"
	"go.starlark.net/starlark"
)

// Limits. Every replica runs every invocation and processor record under the same
// budgets, counted in units that do not depend on the machine: interpreter steps, and
// the elements and bytes of the values the code builds. Past a budget the invocation
// fails with ErrLimitExceeded, with the same text on every replica.

// Defaults of Options.
const (
	// DefaultMaxSteps is the step budget of one invocation or record.
	DefaultMaxSteps = 1_000_000
	// DefaultMaxElements bounds the elements of one list, tuple, dict or set.
	DefaultMaxElements = 100_000
	// DefaultMaxValueBytes bounds one string or bytes value and one encoded value.
	DefaultMaxValueBytes = 1 << 20
	// DefaultMaxIntBits bounds the magnitude of an int a module computes with *, << or
	// int().
	DefaultMaxIntBits = 4096
	// MaxIntBits is DefaultMaxIntBits, the bound before it was an option.
	MaxIntBits = DefaultMaxIntBits
	// MaxMaxSteps, MaxMaxElements and MaxMaxIntBits bound Options' fields; MaxValueBytes
	// is bounded by partition.MaxValueBytes.
	MaxMaxSteps    = 1 << 40
	MaxMaxElements = 1 << 24
	MaxMaxIntBits  = 1 << 16
)

// Dialects of the declarations a module may make (Options.Dialect). A dialect is fixed
// with the cluster version that admits it, so every replica compiles a deployed module
// alike, whatever its binary.
const (
	// Dialect1 (cluster version 3): procedure(fn, read_only, multi, doc) and
	// processor(fn, input, emits, start, doc).
	Dialect1 = 1
	// Dialect2 (cluster version 4): also processor(..., outputs, tick, window, init,
	// merge, result, late) and the window specifications tumbling, hopping and session
	// (window.go).
	Dialect2 = 2
	// LatestDialect is the newest dialect this binary compiles.
	LatestDialect = Dialect2
)

// bytesPerStep is how many bytes of a string or bytes value one charged step covers.
const bytesPerStep = 32

// Options are a module's budgets, its dialect and the names it may not define. Zero
// fields take their defaults. Every replica must use the same Options: a cluster takes
// the budgets from its replicated configuration (from cluster version 4, the settings
// module-max-*; the defaults before) and the dialect from its cluster version.
type Options struct {
	// MaxSteps is the step budget of one invocation, one processor record, and the
	// module's top-level code at Compile: interpreter steps (starlark.Thread's count,
	// deterministic) plus one step per element, and per 32 bytes, of every value an
	// operator, method or built-in function builds or scans (see package doc).
	// Default DefaultMaxSteps.
	MaxSteps uint64
	// MaxElements is the most elements of a list, tuple, dict or set the code builds,
	// reads through the tx or returns. Default DefaultMaxElements.
	MaxElements int
	// MaxValueBytes is the longest string or bytes value the code builds, and the
	// longest encoded value it reads, writes, emits or returns, in bytes; at most
	// partition.MaxValueBytes. Default DefaultMaxValueBytes.
	MaxValueBytes int
	// MaxIntBits bounds the magnitude of an int the code computes with *, << or int(),
	// in bits. Default DefaultMaxIntBits.
	MaxIntBits int
	// Dialect is the declarations the module may use (Dialect1, Dialect2). Default
	// LatestDialect.
	Dialect int
	// Existing names procedures and processors defined elsewhere (the built-ins): the
	// module may not define them (ErrRedefined).
	Existing []string
}

// DefaultOptions returns the default budgets.
func DefaultOptions() Options { return Options{}.withDefaults() }

// Validate checks o: no negative bound and none past its maximum (MaxMaxSteps,
// MaxMaxElements, partition.MaxValueBytes, MaxMaxIntBits), a known dialect.
func (o Options) Validate() error {
	switch {
	case o.MaxSteps > MaxMaxSteps:
		return fmt.Errorf("%w: MaxSteps %d past %d", ErrBadOptions, o.MaxSteps, uint64(MaxMaxSteps))
	case o.MaxElements < 0 || o.MaxElements > MaxMaxElements:
		return fmt.Errorf("%w: MaxElements %d not in 0..%d", ErrBadOptions, o.MaxElements, MaxMaxElements)
	case o.MaxIntBits < 0 || o.MaxIntBits > MaxMaxIntBits:
		return fmt.Errorf("%w: MaxIntBits %d not in 0..%d", ErrBadOptions, o.MaxIntBits, MaxMaxIntBits)
	case o.Dialect < 0 || o.Dialect > LatestDialect:
		return fmt.Errorf("%w: Dialect %d not in 0..%d", ErrBadOptions, o.Dialect, LatestDialect)
	case o.MaxElements < 0:
		return fmt.Errorf("%w: MaxElements %d < 0", ErrBadOptions, o.MaxElements)
	case o.MaxValueBytes < 0:
		return fmt.Errorf("%w: MaxValueBytes %d < 0", ErrBadOptions, o.MaxValueBytes)
	case o.MaxValueBytes > partition.MaxValueBytes:
		return fmt.Errorf("%w: MaxValueBytes %d past partition.MaxValueBytes %d", ErrBadOptions, o.MaxValueBytes, partition.MaxValueBytes)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.MaxSteps == 0 {
		o.MaxSteps = DefaultMaxSteps
	}
	if o.MaxElements == 0 {
		o.MaxElements = DefaultMaxElements
	}
	if o.MaxValueBytes == 0 {
		o.MaxValueBytes = DefaultMaxValueBytes
	}
	if o.MaxIntBits == 0 {
		o.MaxIntBits = DefaultMaxIntBits
	}
	if o.Dialect == 0 {
		o.Dialect = LatestDialect
	}
	return o
}

// Which limit an ErrLimitExceeded names (LimitError.Limit).
const (
	limitSteps      = "steps"
	limitElements   = "elements"
	limitValueBytes = "value bytes"
	limitIntBits    = "int bits"
	limitDepth      = "depth"
)

// LimitError is the error of a run that went past one of its budgets. It matches
// ErrLimitExceeded.
type LimitError struct {
	// Limit names the budget: "steps", "elements", "value bytes", "int bits" or "depth".
	Limit string
	// Detail says what went past it.
	Detail string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrLimitExceeded, e.Limit, e.Detail)
}

// Is reports whether target is ErrLimitExceeded.
func (e *LimitError) Is(target error) bool { return target == ErrLimitExceeded }

// budget is the running count of one invocation, kept in its thread.
type budget struct {
	opts   *Options
	thread *starlark.Thread
	err    *LimitError // the first limit exceeded
	buf    *[]byte     // the run's scratch buffer for encoded values
}

// scratch returns the run's empty scratch buffer for an encoded value the Tx copies.
func (b *budget) scratch() []byte { return (*b.buf)[:0] }

// keep keeps out, grown from scratch, for the next use.
func (b *budget) keep(out []byte) { *b.buf = out }

const budgetKey = "lockstep.budget"

func budgetOf(t *starlark.Thread) *budget { return t.Local(budgetKey).(*budget) }

// runState is the reusable state of one run: its thread, budget and the values handed
// to the code. Pooled, so that a call allocates little of its own.
type runState struct {
	thread  starlark.Thread
	budget  budget
	tx      txValue
	rec     recordValue
	scratch []byte // encoder output, copied by the Tx
}

var runStates = sync.Pool{New: func() any {
	s := &runState{}
	s.budget.thread = &s.thread
	s.budget.buf = &s.scratch
	s.thread.SetLocal(budgetKey, &s.budget)
	s.thread.OnMaxSteps = func(t *starlark.Thread) {
		b := budgetOf(t)
		b.exceeded(limitSteps, "more than %d steps", b.opts.MaxSteps)
		t.Cancel("step budget exceeded")
	}
	s.thread.Print = func(*starlark.Thread, string) {}
	s.thread.Load = func(*starlark.Thread, string) (starlark.StringDict, error) {
		return nil, errors.New("load is not available in a module")
	}
	return s
}}

// newRun returns a run state for one call under opts; release it with done.
func newRun(opts *Options, name string) *runState {
	s := runStates.Get().(*runState)
	s.thread.Name = name
	s.thread.Steps = 0
	s.thread.Uncancel()
	s.thread.SetMaxExecutionSteps(opts.MaxSteps)
	s.budget.opts, s.budget.err = opts, nil
	return s
}

// done returns s to the pool, dropping references to the call's values.
func (s *runState) done() {
	s.tx.tx = nil
	s.rec = recordValue{}
	s.budget.opts = nil
	if cap(s.scratch) > 64<<10 {
		s.scratch = nil
	}
	runStates.Put(s)
}

// exceeded records (the first) limit exceeded and returns it.
func (b *budget) exceeded(limit, format string, args ...any) error {
	if b.err == nil {
		b.err = &LimitError{Limit: limit, Detail: fmt.Sprintf(format, args...)}
	}
	return b.err
}

// charge adds n steps of work to the thread's count.
func (b *budget) charge(n int) error {
	if b.err != nil {
		return b.err
	}
	b.thread.Steps += uint64(n)
	if b.thread.Steps >= b.opts.MaxSteps {
		return b.exceeded(limitSteps, "more than %d steps", b.opts.MaxSteps)
	}
	return nil
}

// cost is the work, in steps, of building or scanning v (shallowly).
func cost(v starlark.Value) int {
	switch v := v.(type) {
	case starlark.String:
		return len(v) / bytesPerStep
	case starlark.Bytes:
		return len(v) / bytesPerStep
	case starlark.Int:
		return intBits(v) / 64
	case *starlark.List, starlark.Tuple, *starlark.Dict, *starlark.Set:
		return starlark.Len(v)
	}
	return 0
}

// deepCost returns the work of one pass over all of v (comparing, hashing or copying
// it): its values and, per 32 bytes, its strings, counted through shared references
// (x = [x, x] doubles it), or a number past limit once it is past limit. The walk is as
// long as the number it returns, so the caller charges for the walk too.
func deepCost(v starlark.Value, limit, depth int) int {
	switch v := v.(type) {
	case starlark.String:
		return 1 + len(v)/bytesPerStep
	case starlark.Bytes:
		return 1 + len(v)/bytesPerStep
	case starlark.Int:
		return 1 + intBits(v)/64
	case starlark.NoneType, starlark.Bool, starlark.Float:
		return 1
	}
	if depth > maxDepth {
		return 1
	}
	n := 1
	add := func(x starlark.Value) bool {
		n += deepCost(x, limit-n, depth+1)
		return n <= limit
	}
	switch v := v.(type) {
	case starlark.Tuple:
		for _, x := range v {
			if !add(x) {
				break
			}
		}
	case *starlark.List:
		for i := range v.Len() {
			if !add(v.Index(i)) {
				break
			}
		}
	case *starlark.Dict:
		for _, kv := range v.Items() {
			if !add(kv[0]) || !add(kv[1]) {
				break
			}
		}
	case *starlark.Set:
		iter := v.Iterate()
		var x starlark.Value
		for iter.Next(&x) {
			if !add(x) {
				break
			}
		}
		iter.Done()
	}
	return n
}

// chargeDeep charges a pass over each of vs.
func (b *budget) chargeDeep(vs ...starlark.Value) error {
	for _, v := range vs {
		if err := b.charge(deepCost(v, b.remaining(), 0)); err != nil {
			return err
		}
	}
	return nil
}

// remaining returns the steps left, at least 0.
func (b *budget) remaining() int {
	if b.thread.Steps >= b.opts.MaxSteps {
		return 0
	}
	return int(min(b.opts.MaxSteps-b.thread.Steps, 1<<40))
}

// scalar reports whether v compares and hashes in constant time or one pass over a
// bounded string.
func scalar(v starlark.Value) bool {
	switch v.(type) {
	case starlark.String, starlark.Bytes, starlark.Int, starlark.Float, starlark.Bool, starlark.NoneType:
		return true
	}
	return false
}

// checkSize fails if v, a value just built, is past the element, byte or int bounds.
func (b *budget) checkSize(v starlark.Value) error {
	switch v := v.(type) {
	case starlark.String:
		return b.checkBytes(len(v))
	case starlark.Bytes:
		return b.checkBytes(len(v))
	case starlark.Int:
		if bits := intBits(v); bits > b.opts.MaxIntBits {
			return b.exceeded(limitIntBits, "int of %d bits, limit %d", bits, b.opts.MaxIntBits)
		}
		return nil
	case *starlark.List, starlark.Tuple, *starlark.Dict, *starlark.Set:
		return b.checkElements(starlark.Len(v))
	}
	return nil
}

func (b *budget) checkBytes(n int) error {
	if n > b.opts.MaxValueBytes {
		return b.exceeded(limitValueBytes, "string or bytes of %d bytes, limit %d", n, b.opts.MaxValueBytes)
	}
	return nil
}

func (b *budget) checkElements(n int) error {
	if n > b.opts.MaxElements {
		return b.exceeded(limitElements, "value of %d elements, limit %d", n, b.opts.MaxElements)
	}
	return nil
}

// built charges and checks a value just built.
func (b *budget) built(v starlark.Value) (starlark.Value, error) {
	if err := b.checkSize(v); err != nil {
		return nil, err
	}
	if err := b.charge(cost(v)); err != nil {
		return nil, err
	}
	return v, nil
}

// reprSize returns an upper bound of len(repr(v)) (and of str(v)), or a number past
// limit once it knows the bound is past limit, charging one step per value visited.
func (b *budget) reprSize(v starlark.Value, limit, depth int) (int, error) {
	if err := b.charge(1); err != nil {
		return 0, err
	}
	if depth > maxDepth {
		return 8, nil // the printer shows a cycle as [...]
	}
	switch v := v.(type) {
	case starlark.String:
		return 4*len(v) + 2, nil // every byte may become \xNN
	case starlark.Bytes:
		return 4*len(v) + 3, nil
	case starlark.Int:
		return intBits(v)/3 + 2, nil
	case starlark.NoneType, starlark.Bool, starlark.Float:
		return 32, nil
	}
	var it starlark.Iterator
	switch v := v.(type) {
	case *starlark.Dict:
		n := 2
		for _, kv := range v.Items() {
			for _, x := range kv {
				s, err := b.reprSize(x, limit-n, depth+1)
				if err != nil {
					return 0, err
				}
				if n += s + 2; n > limit {
					return n, nil
				}
			}
		}
		return n, nil
	case starlark.Iterable:
		it = v.Iterate()
	default:
		return len(v.String()) + 2, nil // a function or another fixed-size value
	}
	defer it.Done()
	n := 16
	var x starlark.Value
	for it.Next(&x) {
		s, err := b.reprSize(x, limit-n, depth+1)
		if err != nil {
			return 0, err
		}
		if n += s + 2; n > limit {
			return n, nil
		}
	}
	return n, nil
}

// checkRepr fails unless the string forms of vs fit MaxValueBytes.
func (b *budget) checkRepr(vs ...starlark.Value) error {
	limit, n := b.opts.MaxValueBytes, 0
	for _, v := range vs {
		s, err := b.reprSize(v, limit-n, 0)
		if err != nil {
			return err
		}
		if n += s; n > limit {
			return b.exceeded(limitValueBytes, "string form of more than %d bytes", limit)
		}
	}
	return nil
}
