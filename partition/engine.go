package partition

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
)

// Engine executes ordered inputs against a fixed set of partitions: serially within a
// partition, in parallel across partitions, with multi-partition inputs as barriers.
type Engine struct {
	cfg     Config
	parts   []*Partition
	workers []*worker // one per partition; nil when cfg.Sequential
	main    lane      // the lane of the goroutine calling Execute
	results []Result
	phase   sync.WaitGroup
	stop    sync.WaitGroup

	procs     []procDef      // Config.Processors by name, or SetProcessors's
	procsMu   sync.RWMutex   // held to change procs, and by readers off the Execute goroutine
	procStats []ProcessStats // per partition, of the running processor phase
	procPhase ProcessorPhase // the running processor phase
	settle    []*stream      // streams deliver appended to
	pending   atomic.Bool    // a processor had records left after the last phase
	ticking   atomic.Bool    // a processor with an OnTick hook had its input stream then

	maxResult atomic.Int64 // the result limit: cfg.MaxResultBytes, or SetMaxResultBytes's
}

// lane is what one goroutine needs to run inputs: a handler, a reusable run and an arena
// for encoded results.
type lane struct {
	h     Handler
	run   txRun
	arena []byte
	parts [1]*Partition
	pin   Input // the input of a processor step
}

// worker runs one partition's share of a phase on its own goroutine.
type worker struct {
	lane
	part *Partition
	jobs chan job
	todo []int
	in   []Input // the batch of the current phase
}

// job is one phase's work for a worker: the indices of the phase's inputs for its
// partition, in order, or a processor phase.
type job struct {
	todo  []int
	procs *ProcessorPhase
}

// NewEngine returns an engine with cfg.Partitions empty partitions. newHandler is called
// once per goroutine that runs inputs. Close releases its goroutines.
func NewEngine(cfg Config, newHandler func() Handler) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.Changelogs = maps.Clone(cfg.Changelogs) // the caller's map may change; ours must not
	e := &Engine{cfg: cfg, procs: newProcDefs(cfg.Processors), procStats: make([]ProcessStats, cfg.Partitions)}
	e.maxResult.Store(int64(cfg.MaxResultBytes))
	e.parts = make([]*Partition, cfg.Partitions)
	for i := range e.parts {
		e.parts[i] = newPartition(i, cfg.ReplicatedTables)
	}
	e.main = lane{h: newHandler()}
	e.main.run.eng = e
	if !cfg.Sequential && cfg.Partitions > 1 {
		e.workers = make([]*worker, cfg.Partitions)
		for i := range e.workers {
			w := &worker{lane: lane{h: newHandler()}, part: e.parts[i], jobs: make(chan job, 1)}
			w.run.eng = e
			e.workers[i] = w
			e.stop.Add(1)
			go e.work(w)
		}
	}
	return e, nil
}

// Close stops the engine's worker goroutines and waits for them. Execute must not be
// running or called afterwards.
func (e *Engine) Close() {
	for _, w := range e.workers {
		close(w.jobs)
	}
	e.stop.Wait()
	e.workers = nil
}

// Partitions returns the engine's partitions, indexed by number.
func (e *Engine) Partitions() []*Partition { return e.parts }

// Config returns the engine's configuration with defaults filled in.
func (e *Engine) Config() Config { return e.cfg }

// Hashes returns every partition's state hash, indexed by partition number.
func (e *Engine) Hashes() []uint64 {
	h := make([]uint64, len(e.parts))
	for i, p := range e.parts {
		h[i] = p.Hash()
	}
	return h
}

// Execute runs the inputs in order and returns one result per input. The results, and the
// Value slices in them, are valid until the next call. Only one goroutine may call it at
// a time.
func (e *Engine) Execute(inputs []Input) []Result {
	if cap(e.results) < len(inputs) {
		e.results = make([]Result, len(inputs))
	}
	e.results = e.results[:len(inputs)]
	clear(e.results)
	e.main.arena = e.main.arena[:0]
	for _, w := range e.workers {
		w.arena = w.arena[:0]
	}
	for i := 0; i < len(inputs); {
		if inputs[i].Multi() {
			e.runMulti(&inputs[i], &e.results[i])
			i++
			continue
		}
		j := i + 1
		for j < len(inputs) && !inputs[j].Multi() {
			j++
		}
		e.runPhase(inputs, i, j)
		i = j
	}
	return e.results
}

// runPhase runs the single-partition inputs in[from:to], each partition's inputs in order
// on that partition's worker, the partitions in parallel.
func (e *Engine) runPhase(in []Input, from, to int) {
	n := len(e.parts)
	if e.workers == nil {
		// Sequential: one partition after another, each in log order. Partitions share no
		// state, so this equals any interleaving.
		for p := 0; p < n; p++ {
			var locked bool
			for i := from; i < to; i++ {
				if in[i].Partition != p {
					continue
				}
				if !locked {
					e.parts[p].mu.Lock()
					locked = true
				}
				e.runSingle(&e.main, in, i)
			}
			if locked {
				e.parts[p].mu.Unlock()
			}
		}
		e.rejectBadPartitions(in, from, to)
		return
	}
	for _, w := range e.workers {
		w.todo = w.todo[:0]
		w.in = in
	}
	for i := from; i < to; i++ {
		if p := in[i].Partition; p >= 0 && p < n {
			e.workers[p].todo = append(e.workers[p].todo, i)
		}
	}
	for _, w := range e.workers {
		if len(w.todo) > 0 {
			e.phase.Add(1)
			w.jobs <- job{todo: w.todo}
		}
	}
	e.rejectBadPartitions(in, from, to)
	e.phase.Wait()
}

func (e *Engine) rejectBadPartitions(in []Input, from, to int) {
	for i := from; i < to; i++ {
		if p := in[i].Partition; p < 0 || p >= len(e.parts) {
			e.results[i] = Result{Err: fmt.Errorf("input partition %d of %d: %w", p, len(e.parts), ErrBadScope)}
		}
	}
}

// work is a worker's loop: run each job's inputs on the worker's partition.
func (e *Engine) work(w *worker) {
	defer e.stop.Done()
	for j := range w.jobs {
		w.part.mu.Lock()
		if j.procs != nil {
			e.runProcessorsOn(&w.lane, w.part, j.procs)
		}
		for _, i := range j.todo {
			e.runSingle(&w.lane, w.in, i)
		}
		w.part.mu.Unlock()
		e.phase.Done()
	}
}

// runSingle runs input i on its home partition; the caller holds that partition's lock.
func (e *Engine) runSingle(l *lane, in []Input, i int) {
	l.parts[0] = e.parts[in[i].Partition]
	l.run.reset(&in[i], l.parts[:])
	e.results[i] = l.execute(&in[i])
}

// runMulti runs one multi-partition input alone, holding every partition in its scope.
func (e *Engine) runMulti(in *Input, res *Result) {
	if err := e.checkScope(in.Scope); err != nil {
		*res = Result{Err: err}
		return
	}
	parts := make([]*Partition, len(in.Scope))
	for i, p := range in.Scope {
		parts[i] = e.parts[p]
		parts[i].mu.Lock()
	}
	e.main.run.reset(in, parts)
	*res = e.main.execute(in)
	for _, p := range parts {
		p.mu.Unlock()
	}
}

func (e *Engine) checkScope(scope []int) error {
	if len(scope) == 0 {
		return fmt.Errorf("empty multi-partition scope: %w", ErrBadScope)
	}
	for i, p := range scope {
		if p < 0 || p >= len(e.parts) || (i > 0 && p <= scope[i-1]) {
			return fmt.Errorf("scope %v of %d partitions: %w", scope, len(e.parts), ErrBadScope)
		}
	}
	return nil
}

// execute runs the handler for in on the lane's prepared run, commits or undoes its
// effects, and returns its result. A result longer than Config.MaxResultBytes undoes the
// effects and becomes ErrResultTooLarge.
func (l *lane) execute(in *Input) Result {
	start := len(l.arena)
	out, err := l.call(in)
	l.run.done = true
	if err == nil {
		// A result too long to answer fails the input like a procedure error, on every
		// replica alike: its size comes from the log alone (DESIGN.md invariants 2 and 7).
		err = checkResult(len(out)-start, int(l.run.eng.maxResult.Load()))
	}
	if err != nil {
		l.run.rollback()
		l.arena = l.arena[:start]
		return Result{Err: err}
	}
	l.run.commit()
	l.arena = out
	return Result{Value: out[start:len(out):len(out)]}
}

// call runs the handler, turning a panic into a PanicError (invariant 2: a panicking
// procedure leaves no trace but its error, and never takes the process down).
func (l *lane) call(in *Input) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &PanicError{Value: panicText(r)}
		}
	}()
	return l.h.Run(&l.run.views[0], in, l.arena)
}
