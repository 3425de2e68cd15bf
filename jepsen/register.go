package jepsen

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// Register is the linearizable-register workload: kv.get, kv.put and kv.cas on a few
// keys at a time, values 0 to 4 (an absent key reads as -1). kv.get goes through
// client.KVGet, a linearizable read the leader answers off the log after a read-index
// round. The history is checked with porcupine, partitioned by key; unknown-outcome
// writes are open-ended (they may take effect at any time after they began), unknown
// reads are dropped.
//
// Each key takes at most KeyOps operations, then the workers move on to fresh keys (as
// Jepsen's independent keys do): porcupine's search grows with a partition's length and
// exponentially with its open-ended writes, so a history of any length, and a fault that
// leaves dozens of writes unknown, stays decidable in bounded time (a planted stale-read
// run of 8,387 operations on 3 keys, 46 unknown, was undecided after 60 s on a loaded
// 2-core machine).
type Register struct {
	// Keys is the number of keys in use at once. Default 3.
	Keys int
	// KeyOps is the most operations a key takes before its slot moves to a fresh key.
	// Default 200.
	KeyOps int
	// CheckTimeout bounds porcupine's search for the verdict, and again the search for
	// linearizability.html (vizBudget at most when the verdict is not a pass). Default 60s.
	CheckTimeout time.Duration

	started atomic.Int64 // operations invoked, for the key rotation
}

// Name implements Workload.
func (r *Register) Name() string { return "register" }

func (r *Register) keys() int {
	if r.Keys <= 0 {
		return 3
	}
	return r.Keys
}

func (r *Register) keyOps() int64 {
	if r.KeyOps <= 0 {
		return 200
	}
	return int64(r.KeyOps)
}

// nextKey is the key of the next operation: the operations of a round (Keys×KeyOps of
// them, in the order workers start them) take the round's Keys keys in turn, so each
// key takes exactly KeyOps, from whichever workers are running then.
func (r *Register) nextKey() string {
	n := int64(r.keys())
	i := r.started.Add(1) - 1
	return fmt.Sprintf("r%d", i/(n*r.keyOps())*n+i%n)
}

// Setup implements Workload: nothing to prepare, keys start absent.
func (r *Register) Setup(context.Context, *client.Client) error { return nil }

// Invoke implements Workload.
func (r *Register) Invoke(ctx context.Context, w *Worker) {
	key := r.nextKey()
	switch w.Rand.IntN(3) {
	case 0:
		w.Do(Op{F: "read", Key: key}, func() ([]int64, error) {
			v, found, err := w.Client.KVGet(ctx, []byte(key))
			if err != nil || !found {
				return []int64{-1}, err
			}
			n, err := strconv.ParseInt(string(v), 10, 64)
			return []int64{n}, err
		})
	case 1:
		v := int64(w.Rand.IntN(5))
		w.Do(Op{F: "write", Key: key, Args: []int64{v}}, func() ([]int64, error) {
			_, err := w.Client.KVPut(ctx, []byte(key), []byte(strconv.FormatInt(v, 10)))
			return nil, err
		})
	default:
		old, nw := int64(w.Rand.IntN(5)), int64(w.Rand.IntN(5))
		w.Do(Op{F: "cas", Key: key, Args: []int64{old, nw}}, func() ([]int64, error) {
			res, err := w.Client.KVCas(ctx, []byte(key), builtin.KVCasArgs{Old: []byte(strconv.FormatInt(old, 10)), New: []byte(strconv.FormatInt(nw, 10))})
			if err != nil {
				return nil, err
			}
			if res.Swapped {
				return []int64{1}, nil
			}
			return []int64{0}, nil
		})
	}
}

// regInput and regOutput are porcupine's view of one operation.
type regInput struct {
	key  string
	f    string
	args []int64
}

type regOutput struct {
	value   int64 // read: value read; cas: 1 swapped, 0 not
	unknown bool
}

// registerModel is a register per key holding an int64 (-1: absent).
var registerModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(regInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return int64(-1) },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(int64), input.(regInput), output.(regOutput)
		switch in.f {
		case "read":
			return out.value == s, s
		case "write":
			return true, in.args[0]
		default: // cas
			swaps := s == in.args[0]
			switch {
			case out.unknown && swaps:
				// Open-ended: taking effect now is one choice; never taking effect is the
				// other, which placing it after every other operation covers.
				return true, in.args[1]
			case out.unknown:
				return true, s
			case out.value == 1:
				return swaps, in.args[1]
			default:
				return !swaps, s
			}
		}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regInput), output.(regOutput)
		res := fmt.Sprint(out.value)
		if out.unknown {
			res = "?"
		}
		switch in.f {
		case "read":
			return fmt.Sprintf("get(%s) → %s", in.key, res)
		case "write":
			return fmt.Sprintf("put(%s, %d)", in.key, in.args[0])
		default:
			return fmt.Sprintf("cas(%s, %d, %d) → %s", in.key, in.args[0], in.args[1], res)
		}
	},
	DescribeState: func(state any) string { return fmt.Sprint(state.(int64)) },
}

// registerOps turns a history into porcupine operations: failed operations and unknown
// reads are left out, unknown writes end at the end of time.
func registerOps(hist []Op) []porcupine.Operation {
	var ops []porcupine.Operation
	for _, op := range hist {
		if op.Process < 0 || op.Status == StatusFail || (op.Status == StatusInfo && op.F == "read") {
			continue
		}
		out := regOutput{unknown: op.Status == StatusInfo}
		ret := op.End
		if out.unknown {
			ret = math.MaxInt64
		} else if len(op.Result) > 0 {
			out.value = op.Result[0]
		}
		ops = append(ops, porcupine.Operation{ClientId: op.Process, Input: regInput{key: op.Key, f: op.F, args: op.Args},
			Call: op.Start, Output: out, Return: ret})
	}
	return ops
}

// vizBudget bounds the search behind linearizability.html when the check did not pass.
const vizBudget = 3 * time.Second

// Check implements Workload: porcupine's linearizability check of the history; the
// visualization goes to dir/linearizability.html.
func (r *Register) Check(_ context.Context, _ *client.Client, hist []Op, dir string) []Verdict {
	timeout := r.CheckTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ops := registerOps(hist)
	res := porcupine.CheckOperationsTimeout(registerModel, ops, timeout)
	v := Verdict{Checker: "linearizable", Valid: res == porcupine.Ok}
	switch res {
	case porcupine.Ok:
		v.Detail = fmt.Sprintf("%d operations linearizable", len(ops))
	case porcupine.Illegal:
		v.Detail = fmt.Sprintf("%d operations are not linearizable: see linearizability.html", len(ops))
	default:
		v.Undecided = true
		v.Detail = fmt.Sprintf("porcupine gave up after %v on %d operations", timeout, len(ops))
	}
	if dir != "" {
		// The visualization needs porcupine's verbose search, which goes on exploring every
		// other key after one is found not linearizable, until the timeout: on a history
		// that failed or could not be decided it gets vizBudget at most.
		budget := timeout
		if res != porcupine.Ok {
			budget = min(timeout, vizBudget)
		}
		_, info := porcupine.CheckOperationsVerbose(registerModel, ops, budget)
		if err := porcupine.VisualizePath(registerModel, info, filepath.Join(dir, "linearizability.html")); err != nil {
			v.Detail += fmt.Sprintf(" (visualization: %v)", err)
		}
	}
	return []Verdict{v}
}
