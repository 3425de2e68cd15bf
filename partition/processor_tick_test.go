package partition

import (
	"errors"
	"fmt"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// Tests of failed OnTick calls (processor_tick.go): each is counted in the processor's
// replicated row, and each change of its error text leaves a dead letter, the same on
// every replica (DESIGN.md section 5: failing work goes to a dead-letter stream, nothing
// fails silently).

// TestProcessorTickErrorsDeadLettered: a hook that fails in phases 1, 2 (error A), 3
// (error B), succeeds in 4 and fails in 5 (A) is counted 4 times and dead-lettered 3
// times (A, B, A), with the error text; sequential and parallel engines agree byte for
// byte.
func TestProcessorTickErrorsDeadLettered(t *testing.T) {
	const parts = 2
	errA, errB := errors.New("output stream gone"), errors.New("other trouble")
	plan := []error{nil, errA, errA, errB, nil, errA}
	newTicking := func(sequential bool) *Engine {
		p := counting("c", false)
		p.OnTick = func(tx *Tx) error {
			if err := bump(tx, "ticks", []byte("n")); err != nil {
				return err
			}
			if err := plan[tx.Now().UnixNano()-testTime]; err != nil {
				return fmt.Errorf("advance: %w", err)
			}
			return nil
		}
		e := newEngine(t, Config{Partitions: parts, Sequential: sequential, Processors: []Processor{p}}, procStreamProcs)
		mustExecute(t, e, createInput(parts, "in"))
		return e
	}
	engines := []*Engine{newTicking(true), newTicking(false)}
	for _, e := range engines {
		for i := range plan {
			st := e.RunProcessors(ProcessorPhase{Time: testTime + int64(i), Seq: uint64(i)})
			want := 0
			if plan[i] != nil {
				want = parts
			}
			if st.TickErrors != want || (want > 0) != (st.TickError != nil) {
				t.Fatalf("phase %d: %d tick errors (%v), want %d", i, st.TickErrors, st.TickError, want)
			}
			if want > 0 && !errors.Is(st.TickError, plan[i]) {
				t.Fatalf("phase %d: TickError %v, want one wrapping %v", i, st.TickError, plan[i])
			}
			for _, ps := range e.ProcessorStatus() {
				if ps.TickFailing != (plan[i] != nil) {
					t.Fatalf("phase %d partition %d: TickFailing %t", i, ps.Partition, ps.TickFailing)
				}
			}
		}
		for _, ps := range e.ProcessorStatus() {
			if ps.TickErrors != 4 || ps.DeadLetters != 0 {
				t.Fatalf("partition %d: %d tick errors, %d dead letters, want 4 and 0", ps.Partition, ps.TickErrors, ps.DeadLetters)
			}
		}
		for _, p := range e.Partitions() {
			var got []string
			for _, r := range readStreamAll(t, p, "in"+DeadLetterSuffix) {
				var dl DeadLetter
				if err := msgpack.Unmarshal(r.Value, &dl); err != nil {
					t.Fatal(err)
				}
				if !dl.Tick || dl.Processor != "c" || string(r.Key) != "c" || dl.Value != nil {
					t.Fatalf("partition %d: dead letter %+v (key %q), want a tick of c", p.ID(), dl, r.Key)
				}
				got = append(got, fmt.Sprintf("%d:%s", dl.EventTime-testTime/1e6, dl.Error))
			}
			want := fmt.Sprint([]string{"0:advance: output stream gone", "0:advance: other trouble", "0:advance: output stream gone"})
			if fmt.Sprint(got) != want {
				t.Fatalf("partition %d: tick dead letters %v, want %v", p.ID(), got, want)
			}
		}
		checkHashes(t, e)
	}
	for i, p := range engines[0].Partitions() {
		if h, h2 := p.Hash(), engines[1].Partitions()[i].Hash(); h != h2 {
			t.Fatalf("partition %d: sequential hash %016x, parallel %016x", i, h, h2)
		}
	}
}

// TestProcessorTickErrorWhileWaiting: a failing hook of a processor whose input does not
// exist is counted in the phase's stats only: it has no row and no dead-letter stream.
func TestProcessorTickErrorWhileWaiting(t *testing.T) {
	p := counting("c", false)
	p.OnTick = func(*Tx) error { return errHandler }
	e := newEngine(t, Config{Partitions: 1, Processors: []Processor{p}}, procStreamProcs)
	st := e.RunProcessors(ProcessorPhase{Time: testTime})
	if st.TickErrors != 1 || !errors.Is(st.TickError, errHandler) {
		t.Fatalf("got %d tick errors (%v), want 1", st.TickErrors, st.TickError)
	}
	if ps := e.ProcessorStatus()[0]; !ps.Waiting || ps.TickErrors != 0 {
		t.Fatalf("status %+v, want waiting with no counts", ps)
	}
	if got := e.Partitions()[0].Streams(); len(got) != 0 {
		t.Fatalf("streams %v, want none", got)
	}
}
