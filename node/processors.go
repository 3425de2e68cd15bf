package node

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/window"
	"github.com/lockstepdb/lockstep/sequencer"
)

// processorTickLoop has the leader append a tick (batch.KindTick) so that processors go
// on without new input: every ProcessorTickInterval while a processor has records
// pending, and every ProcessorIdleTickInterval while a processor whose input stream
// exists waits for time to pass (an OnTick hook). One tick at a time is in flight. Ticks
// are log entries, so every replica runs the same processor phases.
func (n *Node) processorTickLoop() {
	defer n.wg.Done()
	// Not only when the binary carries processors: modules deployed through the log
	// bring their own.
	t := time.NewTicker(n.cfg.ProcessorTickInterval)
	defer t.Stop()
	var inflight atomic.Bool
	var last time.Time
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		if inflight.Load() || !n.leading() {
			continue
		}
		if !n.fsm.ProcessorsPending() && !(n.fsm.HasTickHooks() && time.Since(last) >= n.cfg.ProcessorIdleTickInterval) {
			continue
		}
		last = time.Now()
		inflight.Store(true)
		p := &sequencer.Proposal{Item: batch.Item{Kind: batch.KindTick}, Done: func(batch.Result, uint64, error) { inflight.Store(false) }}
		if err := n.seq.Submit(p); err != nil {
			inflight.Store(false)
		}
	}
}

// processorStatus returns every processor's state on every partition as this node has
// applied it, by processor name, then partition, with the watermark and late count of the
// window operators each declares (procedures.WindowOperators). Each row is read under its
// partition's lock, the operators' rows just after: between two applied entries a row may
// mix two consecutive states. The error names the operators whose rows are corrupt
// (window.ErrCorrupt); they are reported without a watermark, the rest in full.
func (n *Node) processorStatus() ([]wire.ProcessorStatus, error) {
	var errs []error
	infos := map[string]procedures.ProcessorInfo{}
	for _, p := range n.fsm.ProcessorInfos() {
		infos[p.Name] = p
	}
	parts := n.fsm.Engine().Partitions()
	sts := n.fsm.Processors()
	out := make([]wire.ProcessorStatus, len(sts))
	for i, st := range sts {
		info := infos[st.Processor]
		ver, origin := n.fsm.ProcessorOrigin(st.Processor)
		out[i] = wire.ProcessorStatus{
			Processor: st.Processor, Input: info.Input, Partition: st.Partition, Version: ver, Origin: origin, Waiting: st.Waiting,
			Position: st.Position, End: st.NextOffset, Lag: st.Lag, DeadLetters: st.DeadLetters, Skipped: st.Skipped,
			TickErrors: st.TickErrors, TickFailing: st.TickFailing,
		}
		for _, op := range info.Windows {
			w := wire.WindowStatus{Operator: op}
			ws, err := window.ReadOperator(parts[st.Partition], op)
			if err != nil {
				errs = append(errs, fmt.Errorf("processor %s, partition %d: %w", st.Processor, st.Partition, err))
			} else if w.Late = ws.Late; ws.Watermark != window.NoWatermark {
				w.Watermark, w.HasWatermark = ws.Watermark, true
			}
			out[i].Windows = append(out[i].Windows, w)
		}
	}
	return out, errors.Join(errs...)
}

// processors answers OpProcessors from the node's applied state: any node, ready or not,
// without the log.
func (cc *clientConn) processors(req *wire.Request) {
	sts, err := cc.n.processorStatus()
	if err != nil {
		cc.fail(req.ID, err)
		return
	}
	v, err := msgpack.Marshal(sts)
	if err != nil {
		cc.fail(req.ID, err)
		return
	}
	cc.reply(&wire.Response{ID: req.ID, Value: v})
}
