package partition

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

// Tests that a processor bound to a stream that is deleted and created again handles
// every record of the new stream exactly once (DESIGN.md section 5, exactly-once inside:
// nothing is skipped without a count and a reason), whatever the log entries group the
// delete, the create and the appends into.

// recreateProcs add to procStreamProcs "drop" and "dropmid", which delete stream "in"
// and "mid" on every partition in scope (as stream.delete does).
func recreateProcs() procs {
	drop := func(name string) func(tx *Tx, in *Input, out []byte) ([]byte, error) {
		return func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			for _, p := range tx.Scope() {
				v, _ := tx.On(p)
				if err := v.DeleteStream(name); err != nil {
					return out, err
				}
			}
			return out, nil
		}
	}
	ps := procs{"drop": drop("in"), "dropmid": drop("mid")}
	for k, v := range procStreamProcs {
		ps[k] = v
	}
	return ps
}

// seenOnce records each value it handles in table "seen" (a value handled twice counts 2).
func seenOnce() Processor {
	return Processor{Name: "c", Input: "in", Process: func(tx *Tx, rec Record) error {
		return bump(tx, "seen", rec.Value)
	}}
}

// checkRecreated checks, after a processor phase, that every record of stream "in" on
// every partition was handled exactly once, that no value was handled twice, and that
// nothing was counted skipped (there is no retention).
func checkRecreated(t *testing.T, e *Engine, label string) {
	t.Helper()
	for _, p := range e.Partitions() {
		if _, ok := p.streams["in"]; ok {
			for _, r := range readStreamAll(t, p, "in") {
				if n := counter(p, "seen", string(r.Value)); n != 1 {
					t.Fatalf("%s: partition %d record %d (%s) handled %d times, want 1", label, p.ID(), r.Offset, r.Value, n)
				}
			}
		}
		p.Scan("seen", ScanOptions{}, func(k, v []byte) bool {
			if n := binary.BigEndian.Uint64(v); n != 1 {
				t.Fatalf("%s: partition %d handled %s %d times, want once", label, p.ID(), k, n)
			}
			return true
		})
	}
	for _, st := range e.ProcessorStatus() {
		if st.Skipped != 0 {
			t.Fatalf("%s: partition %d skipped %d records with no retention", label, st.Partition, st.Skipped)
		}
		if !st.Waiting && st.Lag != 0 {
			t.Fatalf("%s: partition %d lag %d after a phase with room for everything", label, st.Partition, st.Lag)
		}
	}
	checkHashes(t, e)
}

// TestProcessorStreamRecreatedInOneEntry is the plain case: the stream is created, its
// processor handles 3 records, then one entry deletes it, creates it again and appends 8
// records; all 8 are handled.
func TestProcessorStreamRecreatedInOneEntry(t *testing.T) {
	const parts = 1
	e := newEngine(t, Config{Partitions: parts, Processors: []Processor{seenOnce()}}, recreateProcs())
	in := []Input{createInput(parts, "in")}
	for i := range 3 {
		in = append(in, appendInput(parts, "k", fmt.Sprint("old", i)))
	}
	mustExecute(t, e, in...)
	e.RunProcessors(ProcessorPhase{Time: testTime, Seq: 1})
	in = []Input{{Procedure: "drop", Scope: AllPartitions(parts), Time: testTime}, createInput(parts, "in")}
	for i := range 8 {
		in = append(in, appendInput(parts, "k", fmt.Sprint("new", i)))
	}
	mustExecute(t, e, in...)
	e.RunProcessors(ProcessorPhase{Time: testTime, Seq: 2})
	p := e.Partitions()[0]
	if n := p.Rows("seen"); n != 11 {
		t.Fatalf("handled %d distinct records, want 11 (3 old, 8 new)", n)
	}
	checkRecreated(t, e, "one entry")
}

// TestProcessorStreamRecreatedRandom runs random sequences of appends, deletes and
// creates of the processor's input, grouped at random into log entries (so a delete, the
// create and appends fall in one entry or in several), and checks after every entry's
// processor phase that every record of the stream was handled exactly once.
func TestProcessorStreamRecreatedRandom(t *testing.T) {
	const parts = 3
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		e := newEngine(t, Config{Partitions: parts, Processors: []Processor{seenOnce()}}, recreateProcs())
		exists, id := false, 0
		var entry []Input
		for step := range 60 {
			switch r := rng.IntN(10); {
			case r == 0 && exists:
				entry = append(entry, Input{Procedure: "drop", Scope: AllPartitions(parts), Time: testTime})
				exists = false
			case r <= 1 && !exists:
				entry = append(entry, createInput(parts, "in"))
				exists = true
			case exists:
				id++
				entry = append(entry, appendInput(parts, fmt.Sprint("k", rng.IntN(5)), fmt.Sprint("v", id)))
			}
			if rng.IntN(4) == 0 || step == 59 {
				mustExecute(t, e, entry...)
				entry = entry[:0]
				e.RunProcessors(ProcessorPhase{Time: testTime, Seq: uint64(step), Budget: MaxProcessorBudget})
				checkRecreated(t, e, fmt.Sprintf("seed %d step %d", seed, step))
			}
		}
	}
}
