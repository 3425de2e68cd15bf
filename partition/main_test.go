package partition

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: every Engine a test makes
// must be closed, and Close must stop and wait for all of its workers.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// procs maps procedure names to test procedures. It is built before the engine and only
// read afterwards, so the handler built on it is safe on every worker goroutine.
type procs map[string]func(tx *Tx, in *Input, out []byte) ([]byte, error)

func (ps procs) handler() Handler {
	return HandlerFunc(func(tx *Tx, in *Input, out []byte) ([]byte, error) {
		fn, ok := ps[in.Procedure]
		if !ok {
			return out, fmt.Errorf("no test procedure %q", in.Procedure)
		}
		return fn(tx, in, out)
	})
}

// newEngine returns an engine running ps that is closed when the test ends.
func newEngine(t testing.TB, cfg Config, ps procs) *Engine {
	t.Helper()
	e, err := NewEngine(cfg, ps.handler)
	if err != nil {
		t.Fatalf("NewEngine(%+v): %v", cfg, err)
	}
	t.Cleanup(e.Close)
	return e
}

// result is a Result copied out of the engine, so it outlives the next Execute.
type result struct {
	Value []byte
	Err   string
}

func (r result) String() string {
	if r.Err != "" {
		return "err(" + r.Err + ")"
	}
	return fmt.Sprintf("%q", r.Value)
}

func copyResults(rs []Result) []result {
	out := make([]result, len(rs))
	for i, r := range rs {
		out[i].Value = append([]byte(nil), r.Value...)
		if r.Err != nil {
			out[i].Err = r.Err.Error()
		}
	}
	return out
}

// exec runs inputs in one batch and fails the test on nothing; it returns copied results.
func exec(e *Engine, in ...Input) []result { return copyResults(e.Execute(in)) }

// run1 runs one input and returns its result, copied.
func run1(e *Engine, in Input) result { return exec(e, in)[0] }

// runErr runs one input and returns its error (nil if it succeeded).
func runErr(e *Engine, in Input) error { return e.Execute([]Input{in})[0].Err }

// dump renders the whole visible state of every partition of e: tables with their rows,
// streams with their records, and both hashes. Two engines hold the same state iff their
// dumps are equal.
func dump(e *Engine) string {
	var b strings.Builder
	for _, p := range e.Partitions() {
		fmt.Fprintf(&b, "partition %d hash %016x recomputed %016x\n", p.ID(), p.Hash(), p.RecomputeHash())
		for _, name := range p.Tables() {
			fmt.Fprintf(&b, " table %s (%d rows)\n", name, p.Rows(name))
			p.Scan(name, ScanOptions{}, func(k, v []byte) bool {
				fmt.Fprintf(&b, "  %q=%q\n", k, v)
				return true
			})
		}
		for _, name := range p.Streams() {
			info, _ := p.StreamInfo(name)
			recs, _, err := p.ReadStream(name, info.FirstOffset, 1<<30)
			fmt.Fprintf(&b, " stream %s %+v %v\n", name, info, err)
			for _, r := range recs {
				fmt.Fprintf(&b, "  @%d %q=%q t%d\n", r.Offset, r.Key, r.Value, r.EventTime)
			}
		}
	}
	return b.String()
}

// testAppend appends record with key "k" to stream on tx's partition, first creating the
// stream there, unbounded, if it does not exist.
func testAppend(tx *Tx, stream string, record []byte) (uint64, error) {
	if _, ok := tx.StreamInfo(stream); !ok {
		if err := tx.CreateStream(stream, StreamConfig{}); err != nil {
			return 0, err
		}
	}
	return tx.Append(stream, []byte("k"), record, 0)
}

// rows returns table's rows on p as "key=value" strings, in key order.
func rows(p *Partition, table string) []string {
	var out []string
	p.Scan(table, ScanOptions{}, func(k, v []byte) bool {
		out = append(out, string(k)+"="+string(v))
		return true
	})
	return out
}

// checkHashes fails the test if any partition's incremental hash differs from a full
// recomputation.
func checkHashes(t testing.TB, e *Engine) {
	t.Helper()
	for _, p := range e.Partitions() {
		if h, r := p.Hash(), p.RecomputeHash(); h != r {
			t.Fatalf("partition %d: Hash() = %016x, RecomputeHash() = %016x", p.ID(), h, r)
		}
	}
}

// sortedCopy returns s sorted, for order-insensitive comparisons.
func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}
