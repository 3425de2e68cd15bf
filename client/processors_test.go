package client

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// TestProcessorFromWireCoversEveryField checks that processorFromWire converts every
// field of a wire.ProcessorStatus, its window operators included, to the field of the same
// JSON name, and leaves no field of ProcessorStatus zero.
func TestProcessorFromWireCoversEveryField(t *testing.T) {
	var w wire.ProcessorStatus
	n := 0
	fill(reflect.ValueOf(&w).Elem(), &n)
	got, err := json.Marshal(processorFromWire(&w))
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(&w)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("converted processor status\n got %s\nwant %s", got, want)
	}
	checkFilled(t, reflect.ValueOf(processorFromWire(&w)), "ProcessorStatus")
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
