package client

import (
	"context"
	"fmt"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// ProcessorStatus is one stream processor on one partition, as a node has applied it.
// Every replica holds the same state at the same applied index; one behind the leader
// reports an older one.
type ProcessorStatus struct {
	// Processor is the processor's name, Input the stream it consumes.
	Processor string `json:"processor"`
	Input     string `json:"input"`
	Partition int    `json:"partition"`
	// Version is the running version of its code (name@N of compiled-in code, a module's
	// version), Origin where the code comes from: "binary" or "module NAME vN".
	Version uint32 `json:"version,omitempty"`
	Origin  string `json:"origin,omitempty"`
	// Waiting is set while the input stream does not exist on the partition (or the
	// processor has had no phase since it appeared); the offsets and counts are then zero.
	Waiting bool `json:"waiting"`
	// Position is the next offset the processor handles, End the input stream's next
	// offset on the partition, and Lag = End − Position the records not handled yet.
	Position uint64 `json:"position"`
	End      uint64 `json:"end"`
	Lag      uint64 `json:"lag"`
	// DeadLetters counts the records the processor failed on (sent to the stream
	// Input+".dead"), Skipped those retention trimmed before it reached them.
	DeadLetters uint64 `json:"dead_letters"`
	Skipped     uint64 `json:"skipped"`
	// TickErrors counts the processor's OnTick calls that failed (each change of the
	// error text is a dead letter with Tick set in Input+".dead"); TickFailing is set
	// while the last one failed, e.g. a window whose output stream was deleted.
	TickErrors  uint64 `json:"tick_errors"`
	TickFailing bool   `json:"tick_failing"`
	// Windows are the window operators the processor declares
	// (procedures.WindowOperators), by name; empty if it declares none.
	Windows []WindowStatus `json:"windows,omitempty"`
}

// WindowStatus is one window operator of a processor on one partition.
type WindowStatus struct {
	// Operator is the operator's name (window.Config.Name).
	Operator string `json:"operator"`
	// Watermark is the operator's watermark in Unix milliseconds of event time; valid if
	// HasWatermark, which is false before the operator's first record on the partition.
	Watermark    int64 `json:"watermark_ms"`
	HasWatermark bool  `json:"has_watermark"`
	// Late counts the records that fell in no open window.
	Late uint64 `json:"late"`
}

// WatermarkTime returns the watermark as a time, and false if there is none yet.
func (w WindowStatus) WatermarkTime() (time.Time, bool) {
	if !w.HasWatermark {
		return time.Time{}, false
	}
	return time.UnixMilli(w.Watermark), true
}

// Processors asks the node at addr for its stream processors' state, one entry per
// processor and partition, ordered by processor name, then partition. Any node answers,
// ready or not, from the state it has applied; an empty addr asks the node the client
// currently sends leader requests to. Like Status it makes one attempt, bounded by ctx and
// RequestTimeout.
func (p Procedures) Processors(ctx context.Context, addr string) ([]ProcessorStatus, error) {
	c := p.c
	if addr == "" {
		addr = c.leaderAddr()
	}
	if err := c.acquireFree(ctx); err != nil {
		return nil, c.opErr(fmt.Errorf("client: processors of %s: %w", addr, err))
	}
	defer c.releaseFree()
	resp, err := c.at(ctx, addr, &wire.Request{Op: wire.OpProcessors})
	if err != nil {
		return nil, c.opErr(fmt.Errorf("client: processors of %s: %w", addr, err))
	}
	var ws []wire.ProcessorStatus
	if err := c.decode(resp.Value, &ws); err != nil {
		return nil, fmt.Errorf("client: processors of %s: %w: %w", addr, ErrMalformed, err)
	}
	out := make([]ProcessorStatus, len(ws))
	for i := range ws {
		out[i] = processorFromWire(&ws[i])
	}
	return out, nil
}

// processorFromWire converts one processor state a node sent. It is the one place that
// knows both types: a field added to wire.ProcessorStatus needs a line here
// (TestProcessorFromWireCoversEveryField fails until it has one).
func processorFromWire(w *wire.ProcessorStatus) ProcessorStatus {
	st := ProcessorStatus{
		Processor:   w.Processor,
		Input:       w.Input,
		Partition:   w.Partition,
		Version:     w.Version,
		Origin:      w.Origin,
		Waiting:     w.Waiting,
		Position:    w.Position,
		End:         w.End,
		Lag:         w.Lag,
		DeadLetters: w.DeadLetters,
		Skipped:     w.Skipped,
		TickErrors:  w.TickErrors,
		TickFailing: w.TickFailing,
	}
	if len(w.Windows) > 0 {
		st.Windows = make([]WindowStatus, len(w.Windows))
		for i, ws := range w.Windows {
			st.Windows[i] = WindowStatus{Operator: ws.Operator, Watermark: ws.Watermark, HasWatermark: ws.HasWatermark, Late: ws.Late}
		}
	}
	return st
}
