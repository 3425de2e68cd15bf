package client

import (
	"testing"
	"time"
)

// TestProcessorFromWireCoversEveryField checks that processorFromWire converts every
// field of a wire.ProcessorStatus, its window operators included, to the field of the same
// JSON name, and leaves no field of ProcessorStatus zero.
func TestProcessorFromWireCoversEveryField(t *testing.T) {
	checkConvertsEveryField(t, processorFromWire, "ProcessorStatus")
}

// TestWatermarkTime: a watermark reads as its time, none as false.
func TestWatermarkTime(t *testing.T) {
	if _, ok := (WindowStatus{Watermark: 5}).WatermarkTime(); ok {
		t.Fatal("no watermark: got one")
	}
	tm, ok := WindowStatus{Watermark: 1_700_000_000_123, HasWatermark: true}.WatermarkTime()
	if want := time.UnixMilli(1_700_000_000_123); !ok || !tm.Equal(want) {
		t.Fatalf("got %v, %t; want %v", tm, ok, want)
	}
}
