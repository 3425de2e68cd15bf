package partition

import "github.com/cespare/xxhash/v2"

// Input is one ordered input to the engine: a procedure invocation already placed in the
// total order by the sequencer.
type Input struct {
	// Procedure names the procedure the Handler runs.
	Procedure string
	// Key is the partition key of a single-partition input, handed to the procedure.
	Key []byte
	// Partition is the home partition of a single-partition input (see PartitionOf).
	// Ignored when Scope is set.
	Partition int
	// Scope, when non-nil, makes this a multi-partition input reaching exactly these
	// partitions, which must be ascending and unique. It runs alone, as a barrier.
	Scope []int
	// Args is the procedure's encoded arguments.
	Args []byte
	// Time is the batch time in Unix nanoseconds, stamped by the sequencer; Tx.Now
	// returns it.
	Time int64
	// Seq is the input's log position, unique and increasing; it seeds Tx.Rand.
	Seq uint64
}

// Multi reports whether the input is multi-partition.
func (in *Input) Multi() bool { return in.Scope != nil }

// Result is the outcome of one input.
type Result struct {
	// Value is the handler's encoded result; nil when Err is set. It is valid until the
	// next Execute call.
	Value []byte
	// Err is the typed error the input failed with, identical on every replica.
	Err error
}

// PartitionOf returns the partition that owns key among n partitions: a stable hash of the
// key modulo n. The sequencer and every replica use it, so it must never change for an
// existing cluster.
func PartitionOf(key []byte, n int) int {
	return int(xxhash.Sum64(key) % uint64(n))
}

// AllPartitions returns the scope that reaches every one of n partitions.
func AllPartitions(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// Handler runs the procedure an input names. The Engine gives each worker goroutine its
// own Handler, so a Handler need not be safe for concurrent use.
type Handler interface {
	// Run executes in's procedure against tx and appends its encoded result to out. An
	// error, or a panic, makes the engine undo every effect of the input; the error becomes
	// the input's result and must be the same on every replica. So does a result longer
	// than Config.MaxResultBytes, which becomes ErrResultTooLarge.
	Run(tx *Tx, in *Input, out []byte) ([]byte, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(tx *Tx, in *Input, out []byte) ([]byte, error)

// Run calls f.
func (f HandlerFunc) Run(tx *Tx, in *Input, out []byte) ([]byte, error) { return f(tx, in, out) }
