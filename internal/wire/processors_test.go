package wire

import (
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestProcessorStatusRoundTrip: an OpProcessors value decodes to what was encoded, zero
// fields (left out by omitempty) and a watermark at the bottom of the range included.
func TestProcessorStatusRoundTrip(t *testing.T) {
	in := []ProcessorStatus{
		{Processor: "p", Input: "s", Partition: 0, Waiting: true},
		{Processor: "p", Input: "s", Partition: 3, Position: 1 << 40, End: 1<<40 + 7, Lag: 7, DeadLetters: 2, Skipped: 1,
			Windows: []WindowStatus{{Operator: "w", Watermark: -1 << 62, HasWatermark: true, Late: 9}, {Operator: "x"}}},
	}
	b, err := msgpack.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out []ProcessorStatus
	if err := msgpack.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("got %+v, want %+v", out, in)
	}
}
