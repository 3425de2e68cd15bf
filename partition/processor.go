package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Processors are code bound to an input stream, run by the engine at a fixed point of
// every log entry (Engine.RunProcessors, after the entry's inputs), on every partition,
// over the records of that partition's log of the stream, in offset order. Everything the
// runtime keeps is partition state: a processor's position, dead-letter and skipped counts
// are rows of the table SysProcessors, dead letters are records of the stream
// Input+DeadLetterSuffix, and records emitted to other partitions wait in the emitting
// partition's outbox only until the end of the entry (see Tx.Emit). So positions are
// hashed and snapshotted with the rest, and replay reproduces them.

// Names the processor runtime keeps its state under.
const (
	// SysProcessors is the table of processor positions: key the processor's name, value
	// its state (next offset, dead letters, skipped records; see ProcessorStatus).
	SysProcessors = "sys.processors"
	// SysUndelivered is the table counting records emitted to a stream that did not exist
	// on the target partition at delivery: key the stream name, value a big-endian uint64.
	SysUndelivered = "sys.undelivered"
	// DeadLetterSuffix names a processor's dead-letter stream: its input stream's name
	// followed by this suffix.
	DeadLetterSuffix = ".dead"
	// DefaultProcessorBudget is the number of records a processor handles per partition
	// per log entry when ProcessorPhase.Budget is 0.
	DefaultProcessorBudget = 1024
	// MaxProcessorBudget caps a phase's budget however many records its entry appended.
	MaxProcessorBudget = 1 << 20
)

// Errors of processors.
var (
	// ErrUndeclaredStream is returned when a processor appends or emits to a stream it
	// did not declare (Processor.Emits), or creates or deletes a stream: its record fails.
	ErrUndeclaredStream = errors.New("partition: processor wrote to a stream it did not declare")
	// ErrBadProcessor is returned by Config.Validate for an invalid processor definition.
	ErrBadProcessor = errors.New("partition: bad processor definition")
	// ErrSystemTable is returned when an input or processor writes a table of the
	// processor runtime (a name starting with "sys.").
	ErrSystemTable = errors.New("partition: table reserved for the processor runtime")
)

// Processor is a stream processor as the engine runs it. Process and OnTick follow the
// rules of procedures: deterministic, no goroutines, no I/O, no wall clock.
type Processor struct {
	// Name identifies the processor and keys its state; unique, a valid table key.
	Name string
	// Input is the stream whose records the processor consumes. The processor waits
	// while the stream does not exist.
	Input string
	// Emits lists the streams the processor may Append or Emit to.
	Emits []string
	// Outputs lists streams of Emits that the runtime creates, with their configuration,
	// once the input exists (see OutputStream).
	Outputs []OutputStream
	// StartLatest starts the processor at the stream's next offset when it first sees the
	// stream; otherwise it starts at the stream's first offset (earliest).
	StartLatest bool
	// Process handles one record in its own Tx: an error or a panic undoes the record's
	// effects and sends it to the dead-letter stream.
	Process func(tx *Tx, rec Record) error
	// OnTick, if set, runs once per partition per processor phase, in its own Tx, after
	// the partition's records; an error or panic undoes its effects. For window.Advance.
	OnTick func(tx *Tx) error
}

// ValidateProcessors reports the first invalid processor of a set, wrapped around
// ErrBadProcessor: a name that is not a valid row key or is used twice, an input stream
// whose dead-letter stream name would be too long, a bad emitted stream name, an emitted
// stream equal to the input, no Process function, or a bad declared output (see
// OutputStream).
func ValidateProcessors(ps []Processor) error {
	seen := map[string]bool{}
	for i := range ps {
		p := &ps[i]
		switch {
		case checkKey([]byte(p.Name)) != nil:
			return fmt.Errorf("%w: name %q", ErrBadProcessor, p.Name)
		case seen[p.Name]:
			return fmt.Errorf("%w: %s named twice", ErrBadProcessor, p.Name)
		case checkName(p.Input) != nil || checkName(p.Input+DeadLetterSuffix) != nil:
			return fmt.Errorf("%w: %s: input stream %q", ErrBadProcessor, p.Name, p.Input)
		case p.Process == nil:
			return fmt.Errorf("%w: %s: no Process function", ErrBadProcessor, p.Name)
		}
		for _, s := range p.Emits {
			if checkName(s) != nil || s == p.Input {
				// Its own input would grow under it as it reads: a cycle.
				return fmt.Errorf("%w: %s: emitted stream %q", ErrBadProcessor, p.Name, s)
			}
		}
		seen[p.Name] = true
	}
	return validateOutputs(ps)
}

// procDef is a processor with what the engine derives from it once.
type procDef struct {
	Processor
	key  []byte // Name as a row key of SysProcessors
	dead string // the dead-letter stream
	seed uint64 // mixed into the Rand seed of its Txs: its name and input stream
}

// recordSeed seeds Tx.Rand for the record at offset off of d's input on partition part:
// a function of (processor, stream, partition, offset), so no two records of the stream
// draw the same sequence (the partition was missing once: offset k drew alike on every
// partition), and a record draws the same whichever entry its processor reaches it in.
func (d *procDef) recordSeed(part int, off uint64) uint64 {
	return mix64(mix64(d.seed+uint64(part)) + off)
}

// tickSeed seeds Tx.Rand for d's OnTick hook on partition part in the entry whose Seq is
// entry.
func (d *procDef) tickSeed(entry uint64, part int) uint64 {
	return mix64(mix64(entry^d.seed) + uint64(part) + 1)
}

func newProcDefs(ps []Processor) []procDef {
	defs := make([]procDef, len(ps))
	for i, p := range ps {
		p.Emits = append([]string(nil), p.Emits...)
		p.Outputs = append([]OutputStream(nil), p.Outputs...)
		defs[i] = procDef{Processor: p, key: []byte(p.Name), dead: p.Input + DeadLetterSuffix,
			seed: mix64(namespaceHash('p', p.Name) ^ namespaceHash(kindStream, p.Input))}
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	return defs
}

// ProcessorPhase says where in the log a processor phase runs.
type ProcessorPhase struct {
	// Time is the log entry's batch time in Unix nanoseconds (Tx.Now).
	Time int64
	// Seq is unique per log entry and identical on every replica; it seeds Tx.Rand.
	Seq uint64
	// Budget is the most records each processor handles per partition in this phase;
	// the rest waits for the next phase. 0 means DefaultProcessorBudget.
	Budget int
	// BudgetPerAppend adds to Budget this many records for each stream record that the
	// entry's inputs appended (committed inputs since the last phase, on all partitions;
	// not processors, nor deliveries), up to MaxProcessorBudget in all. So an entry
	// carrying many records gives processors proportionally more work, while a backlog
	// alone (a burst, a processor catching up from earliest) never raises it: a phase's
	// work stays bounded by the entry's own. 0 keeps Budget fixed. It must be the same on
	// every replica.
	BudgetPerAppend int
}

// ProcessStats counts what one processor phase did, over all partitions.
type ProcessStats struct {
	// Processed counts records handled (dead-lettered ones included).
	Processed int
	// DeadLetters counts records whose processor failed.
	DeadLetters int
	// Skipped counts records trimmed by retention before their processor reached them.
	Skipped int
	// TickErrors counts OnTick calls that failed (their effects were undone);
	// TickError is the first of them, by partition then processor name, for a log line
	// (its text is the one in the dead letter; see Processor.OnTick).
	TickErrors int
	TickError  error
	// Delivered counts records moved from outboxes to their partitions' streams;
	// Undelivered those whose stream did not exist there (counted in SysUndelivered).
	Delivered, Undelivered int
	// Pending reports whether a processor has records left after the phase.
	Pending bool
	// Budget is the budget each processor had per partition in the phase
	// (ProcessorPhase.Budget scaled by BudgetPerAppend).
	Budget int
}

func (s *ProcessStats) add(o *ProcessStats) {
	s.Processed += o.Processed
	s.DeadLetters += o.DeadLetters
	s.Skipped += o.Skipped
	s.TickErrors += o.TickErrors
	if s.TickError == nil {
		s.TickError = o.TickError
	}
}

// ProcessorStatus is one processor's state on one partition.
type ProcessorStatus struct {
	Processor string
	Partition int
	// Waiting is set while the input stream does not exist (or the processor has not yet
	// had a phase since it was created); the counts are then zero.
	Waiting bool
	// Position is the next offset the processor handles; NextOffset the stream's next
	// offset; Lag their difference.
	Position, NextOffset, Lag uint64
	// DeadLetters counts the records sent to the dead-letter stream; Skipped those
	// trimmed by retention before the processor reached them.
	DeadLetters, Skipped uint64
	// TickErrors counts the OnTick calls that failed while the input stream existed;
	// TickFailing is set while the last one failed (the dead-letter stream holds a
	// DeadLetter with Tick set and the error for each change of the error's text).
	TickErrors  uint64
	TickFailing bool
}

// procState is a processor's row of SysProcessors. ticks counts its failed OnTick
// calls; tickErr is a hash (never 0) of the last one's error text while the last call
// failed, else 0: a failing tick is dead-lettered when tickErr changes, so a hook that
// fails in every phase the same way leaves one dead letter and a growing count.
type procState struct {
	next, dead, skipped uint64
	ticks, tickErr      uint64
}

// A row is procStateBytes long, or procStateTickBytes once a tick has failed: rows of
// processors whose ticks never failed keep the shorter encoding (and hash).
const (
	procStateBytes     = 24
	procStateTickBytes = 40
)

func (s procState) encode() []byte {
	b := make([]byte, 0, procStateTickBytes)
	b = binary.BigEndian.AppendUint64(b, s.next)
	b = binary.BigEndian.AppendUint64(b, s.dead)
	b = binary.BigEndian.AppendUint64(b, s.skipped)
	if s.ticks == 0 && s.tickErr == 0 {
		return b
	}
	b = binary.BigEndian.AppendUint64(b, s.ticks)
	return binary.BigEndian.AppendUint64(b, s.tickErr)
}

// loadProcState reads a processor's row; ok is false when it has none yet.
func (p *Partition) loadProcState(key []byte) (s procState, ok bool) {
	t := p.tables[SysProcessors]
	if t == nil {
		return s, false
	}
	v, ok := t.lookup(key)
	if !ok {
		return s, false
	}
	if len(v) != procStateBytes && len(v) != procStateTickBytes {
		panic(fmt.Sprintf("partition: %s row %q has %d bytes (invariant: only the processor runtime writes it)", SysProcessors, key, len(v)))
	}
	s = procState{next: binary.BigEndian.Uint64(v), dead: binary.BigEndian.Uint64(v[8:]), skipped: binary.BigEndian.Uint64(v[16:])}
	if len(v) == procStateTickBytes {
		s.ticks, s.tickErr = binary.BigEndian.Uint64(v[24:]), binary.BigEndian.Uint64(v[32:])
	}
	return s, true
}

func (p *Partition) storeProcState(key []byte, s procState) {
	p.tableFor(SysProcessors, true).put(key, s.encode())
}

// isSysTable reports whether name is a table of the processor runtime.
func isSysTable(name string) bool { return strings.HasPrefix(name, sysPrefix) }

const sysPrefix = "sys."
