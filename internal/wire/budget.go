package wire

import (
	"fmt"
	"sync/atomic"
)

// ErrReadBudget is returned by ReadFrame when a frame's body cannot grow because the
// byte budget shared by every connection reading frames is spent. It wraps ErrOverloaded.
// The body was only partly read, so the stream is no longer aligned on frames: the
// connection must be closed.
var ErrReadBudget error = &frameError{"wire: read budget of in-flight frame bytes spent", ErrOverloaded}

// ReadBudget bounds the memory held by frame bodies being received over many connections:
// a body's chunks after its first (readChunkBytes) are allocated only by taking their bytes from the budget,
// and gives them back once the frame is read or fails. A peer that announces a large
// frame and never finishes it so pins at most its first chunk plus what the budget let it
// take, and peers together pin at most the budget. Safe for concurrent use.
type ReadBudget struct {
	limit int64
	used  atomic.Int64
	// OnRefused, if set, is called each time a frame is refused for want of budget.
	OnRefused func()
	// OnDrained, if set, is called when nothing is taken any more after at least a
	// quarter of the budget was, on the goroutine that gave the last bytes back: the
	// memory of the frames that were being received (a burst of large requests, or
	// half-sent frames whose connections closed) has just become garbage.
	OnDrained func()
	high      atomic.Bool // a quarter of the limit was taken since the last drain
}

// NewReadBudget returns a budget of limit bytes (limit > 0).
func NewReadBudget(limit int64) (*ReadBudget, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("wire: read budget %d must be positive", limit)
	}
	return &ReadBudget{limit: limit}, nil
}

// Limit is the budget's size in bytes.
func (b *ReadBudget) Limit() int64 { return b.limit }

// Used is the number of bytes taken now.
func (b *ReadBudget) Used() int64 { return b.used.Load() }

// take reserves n bytes; false, reserving nothing, if that would pass the limit.
func (b *ReadBudget) take(n int) bool {
	if b == nil {
		return true
	}
	for {
		u := b.used.Load()
		if u+int64(n) > b.limit {
			if b.OnRefused != nil {
				b.OnRefused()
			}
			return false
		}
		if b.used.CompareAndSwap(u, u+int64(n)) {
			if u+int64(n) >= b.limit/4 && !b.high.Load() {
				b.high.Store(true)
			}
			return true
		}
	}
}

// give returns n bytes taken before.
func (b *ReadBudget) give(n int) {
	if b != nil && n != 0 && b.used.Add(-int64(n)) == 0 && b.high.Load() && b.high.Swap(false) && b.OnDrained != nil {
		b.OnDrained()
	}
}
