package node

import (
	"runtime/debug"
	"time"
)

// reclaimPause is the least time between two reclaims: a reclaim is a full collection,
// so a peer that fills and drains the read budget over and over costs one every 5s at
// most.
const reclaimPause = 5 * time.Second

// reclaimer gives the memory of request frames back to the operating system once they
// are garbage. Go's collector runs when the heap grows, and returns freed pages slowly:
// after an attack of half-sent frames whose connections then close, nothing allocates
// enough to collect, and the node would keep the attack's peak (150 MiB and more) for
// minutes. So when the read budget drains after heavy use (wire.ReadBudget.OnDrained),
// the node collects and returns the freed memory at once.
type reclaimer struct {
	wake chan struct{} // capacity 1: a drain while a reclaim waits is folded into it
}

func newReclaimer() reclaimer { return reclaimer{wake: make(chan struct{}, 1)} }

// drained asks for a reclaim; it never blocks (it runs on a connection's read goroutine).
func (r reclaimer) drained() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// reclaimLoop reclaims when asked, at most once per reclaimPause, until the node closes.
func (n *Node) reclaimLoop() {
	defer n.wg.Done()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.reclaim.wake:
		}
		debug.FreeOSMemory()
		n.metrics.limits.reclaims.Inc()
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(reclaimPause):
		}
	}
}
