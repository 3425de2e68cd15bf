package jepsen

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/client"
)

// Outcomes of an operation, as Jepsen names them.
const (
	// StatusOK: the operation completed and its result is known.
	StatusOK = "ok"
	// StatusFail: the operation certainly had no effect.
	StatusFail = "fail"
	// StatusInfo: the outcome is unknown; the operation may have taken effect, at any
	// time after it began (checkers treat it as open-ended).
	StatusInfo = "info"
)

// Op is one operation of a history: what a worker asked, when, and what came back. Times
// are nanoseconds since the run began, by the harness's monotonic clock.
type Op struct {
	// Process is the worker that ran it; -1 for the checkers' final reads.
	Process int `json:"process"`
	// F is the operation: read, write, cas, transfer, total, add, append.
	F string `json:"f"`
	// Key is the key, counter, account pair or element it concerns.
	Key string `json:"key,omitempty"`
	// Args are its integer arguments (value written, cas old and new, amount...).
	Args []int64 `json:"args,omitempty"`
	// Result is its integer result (value read, new counter value, offset...).
	Result []int64 `json:"result,omitempty"`
	// Status is StatusOK, StatusFail or StatusInfo.
	Status string `json:"status"`
	// Err is the error text of a failed or unknown operation.
	Err string `json:"error,omitempty"`
	// Start and End bound the operation, in nanoseconds since the run began.
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// Recorder collects the operations of a run. Safe for concurrent use.
type Recorder struct {
	begin time.Time
	mu    sync.Mutex
	ops   []Op
}

// NewRecorder starts a history at now.
func NewRecorder() *Recorder { return &Recorder{begin: time.Now()} }

// Since returns the nanoseconds since the history began.
func (r *Recorder) Since() int64 { return int64(time.Since(r.begin)) }

// Add records op.
func (r *Recorder) Add(op Op) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// Ops returns a copy of the history so far.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// definite are the errors after which a request certainly did not run (client/errors.go).
var definite = []error{client.ErrProcedure, client.ErrBadArguments, client.ErrUnknownProcedure,
	client.ErrTooLarge, client.ErrBadScope}

// Classify returns the status of an operation that returned err: ok for nil, fail when the
// error says nothing ran, info for everything else (timeouts, lost connections, retries
// exhausted, ErrUnknownOutcome) — unknown is always the safe answer.
func Classify(err error) string {
	if err == nil {
		return StatusOK
	}
	if errors.Is(err, client.ErrRetriesExhausted) || errors.Is(err, client.ErrUnknownOutcome) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return StatusInfo
	}
	for _, d := range definite {
		if errors.Is(err, d) {
			return StatusFail
		}
	}
	return StatusInfo
}

// Worker is one client process of a workload, with its own client and session.
type Worker struct {
	// Process is the worker's number.
	Process int
	// Client is its own client (its own session).
	Client *client.Client
	// Rand is its random source, seeded from the run's seed and the worker's number.
	Rand *rand.Rand
	// Seq counts the operations it invoked, for unique values.
	Seq int64
	rec *Recorder
}

// Do runs call as operation op (F, Key, Args set) and records it with the result res
// returns when call succeeded.
func (w *Worker) Do(op Op, call func() ([]int64, error)) Op {
	w.Seq++
	return w.record(op, call)
}

// record is Do without counting the operation in Seq: safe for concurrent use, for a
// workload that runs several operations of one worker at once (their Process is the
// same, and their spans overlap).
func (w *Worker) record(op Op, call func() ([]int64, error)) Op {
	op.Process = w.Process
	op.Start = w.rec.Since()
	res, err := call()
	op.End = w.rec.Since()
	op.Status = Classify(err)
	if err != nil {
		op.Err = err.Error()
	} else {
		op.Result = res
	}
	w.rec.Add(op)
	return op
}

// Verdict is one checker's finding.
type Verdict struct {
	// Checker names the check.
	Checker string `json:"checker"`
	// Valid reports whether the history passed it.
	Valid bool `json:"valid"`
	// Detail explains a failure, or summarises a pass.
	Detail string `json:"detail,omitempty"`
	// Undecided is set when the checker could not decide (porcupine timed out): the run
	// is then invalid rather than failed.
	Undecided bool `json:"undecided,omitempty"`
}

// Workload generates operations and checks the history they made.
type Workload interface {
	// Name is the workload's name.
	Name() string
	// Setup prepares the cluster's state (accounts, streams) before the workers start.
	Setup(ctx context.Context, cl *client.Client) error
	// Invoke runs one random operation as w and records it.
	Invoke(ctx context.Context, w *Worker)
	// Check reads the final state through cl (a healed cluster) and checks the history;
	// dir is the run's results folder, for extra artifacts.
	Check(ctx context.Context, cl *client.Client, hist []Op, dir string) []Verdict
}
