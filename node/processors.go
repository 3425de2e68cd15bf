package node

import (
	"sync/atomic"
	"time"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/sequencer"
)

// processorTickLoop has the leader append a tick (batch.KindTick) so that processors go
// on without new input: every ProcessorTickInterval while a processor has records
// pending, and every ProcessorIdleTickInterval while a processor whose input stream
// exists waits for time to pass (an OnTick hook). One tick at a time is in flight. Ticks
// are log entries, so every replica runs the same processor phases.
func (n *Node) processorTickLoop() {
	defer n.wg.Done()
	if len(n.fsm.Registry().Processors()) == 0 {
		return
	}
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
