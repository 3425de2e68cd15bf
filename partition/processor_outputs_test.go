package partition

import (
	"errors"
	"testing"
)

// TestProcessorOutputStreams: declared outputs are created at the start of the first
// phase in which their processor's input exists, on every partition — a chain of them in
// one phase — keep the configuration of a stream the user created first, and come back,
// empty, after a delete.
func TestProcessorOutputStreams(t *testing.T) {
	const parts = 3
	nop := func(*Tx, Record) error { return nil }
	ps := []Processor{
		{Name: "a", Input: "in", Emits: []string{"mid", "side"}, Process: nop,
			Outputs: []OutputStream{{Name: "mid", Config: StreamConfig{MaxRecords: 7}}, {Name: "side", Config: StreamConfig{Compact: true}}}},
		{Name: "b", Input: "mid", Emits: []string{"out"}, Process: nop, Outputs: []OutputStream{{Name: "out"}}},
	}
	e := newEngine(t, Config{Partitions: parts, Processors: ps}, recreateProcs())
	e.RunProcessors(ProcessorPhase{Time: testTime})
	if got := e.Partitions()[0].Streams(); len(got) != 0 {
		t.Fatalf("streams %v before the input exists, want none", got)
	}
	mustExecute(t, e, createInput(parts, "side")) // the user's, unbounded
	mustExecute(t, e, createInput(parts, "in"))
	e.RunProcessors(ProcessorPhase{Time: testTime})
	want := map[string]StreamConfig{"in": {}, "in.dead": {}, "mid": {MaxRecords: 7}, "mid.dead": {}, "side": {}, "out": {}}
	check := func(label string) {
		t.Helper()
		for _, p := range e.Partitions() {
			if got := p.Streams(); len(got) != len(want) {
				t.Fatalf("%s: partition %d streams %v, want %d", label, p.ID(), got, len(want))
			}
			for name, cfg := range want {
				if info, ok := p.StreamInfo(name); !ok || info.Config != cfg {
					t.Fatalf("%s: partition %d %s: %t %+v, want %+v", label, p.ID(), name, ok, info.Config, cfg)
				}
			}
		}
		checkHashes(t, e)
	}
	check("after the input's phase")
	mustExecute(t, e, Input{Procedure: "dropmid", Scope: AllPartitions(parts), Time: testTime})
	e.RunProcessors(ProcessorPhase{Time: testTime})
	check("after mid was deleted")
}

// TestValidateOutputs: a declared output must be emitted, validly configured, and declared
// alike by every processor that declares it.
func TestValidateOutputs(t *testing.T) {
	nop := func(*Tx, Record) error { return nil }
	for i, ps := range [][]Processor{
		{{Name: "a", Input: "in", Process: nop, Outputs: []OutputStream{{Name: "out"}}}},
		{{Name: "a", Input: "in", Emits: []string{"out"}, Process: nop, Outputs: []OutputStream{{Name: "out", Config: StreamConfig{MaxBytes: -1}}}}},
		{{Name: "a", Input: "in", Emits: []string{"out"}, Process: nop, Outputs: []OutputStream{{Name: "out"}}},
			{Name: "b", Input: "in2", Emits: []string{"out"}, Process: nop, Outputs: []OutputStream{{Name: "out", Config: StreamConfig{Compact: true}}}}},
	} {
		if err := ValidateProcessors(ps); !errors.Is(err, ErrBadProcessor) {
			t.Errorf("#%d: got %v, want ErrBadProcessor", i, err)
		}
	}
}
