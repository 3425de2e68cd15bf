package client

import (
	"context"
	"errors"
	"time"
)

// errTimedOut is the reply of a waiter whose attempt timer fired first; attempt turns it
// into an error wrapping errAttemptTimeout.
var errTimedOut = errors.New("attempt timer fired")

// errSendAborted is what a waiter, as the context of a blocked send, reports once its
// attempt is over; roundTrip replaces it with the reason.
var errSendAborted = errors.New("send aborted")

// waiter is one roundTrip's claim on its answer. Waiters are pooled per conn, so a
// request allocates neither a reply channel nor a timer nor a context. The rules that
// make reuse safe:
//
//  1. Delivery. A reply is put in ch only by the goroutine that removes the waiter from
//     conn.pending, and under conn.mu in the same critical section: the reader (the
//     Response), conn.fail (the conn died) or expire (the attempt timed out). So ch gets
//     at most one reply per use, and a waiter out of pending gets none later.
//  2. Return. roundTrip hands a waiter back to the pool only if it took the waiter's one
//     reply from ch, or removed it from pending itself (forget drains a reply delivered
//     just before); if the attempt timer was stopped before it fired; if no caller
//     context callback may still run; and if abort is still open.
//
// Any other waiter is dropped for the garbage collector: a late timer or context callback
// can then only touch a waiter nobody uses any more.
type waiter struct {
	cn     *conn         // immutable: a waiter serves one conn
	ch     chan reply    // 1-buffered; see rule 1
	abort  chan struct{} // closed once the attempt is over while a send may be blocked
	timer  *time.Timer   // calls expire when the attempt's time is up; nil until first use
	cancel func()        // w.cancelSend, bound once: the caller-context callback

	// Set by roundTrip for one use; id and closable are read by other goroutines only
	// under cn.mu while the waiter is in pending.
	id       uint64
	closable bool            // Client.Close aborts it (all but Close's own request)
	ctx      context.Context // the caller's, for sendCtx.Value and Deadline
	aborted  bool            // abort is closed; guarded by cn.mu
}

func newWaiter(cn *conn) *waiter {
	w := &waiter{cn: cn, ch: make(chan reply, 1), abort: make(chan struct{})}
	w.cancel = w.cancelSend
	return w
}

// arm starts the attempt timer.
func (w *waiter) arm(d time.Duration) {
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.expire)
		return
	}
	w.timer.Reset(d)
}

// expire runs when the attempt timer fires: if the waiter is still pending, it delivers
// errTimedOut and aborts a blocked send.
func (w *waiter) expire() {
	c := w.cn
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[w.id] != w {
		return // answered, failed or given up on already
	}
	delete(c.pending, w.id)
	w.ch <- reply{err: errTimedOut}
	w.abortLocked()
}

// cancelSend runs when the caller's context ends during the send: it aborts the send.
func (w *waiter) cancelSend() {
	w.cn.mu.Lock()
	defer w.cn.mu.Unlock()
	if w.cn.pending[w.id] == w {
		w.abortLocked()
	}
}

// abortLocked closes abort, once. cn.mu is held.
func (w *waiter) abortLocked() {
	if !w.aborted {
		w.aborted = true
		close(w.abort)
	}
}

// reusable reports whether abort is still open. The roundTrip that owns w calls it once w
// is out of pending and no callback can run, so nothing closes abort concurrently.
func (w *waiter) reusable() bool {
	select {
	case <-w.abort:
		return false
	default:
		return true
	}
}

// sendCtx is a waiter seen as the context of its request's send (wire.Conn.SendRequest
// blocks, while the send queue is full, until the context is done). Done is closed when
// the attempt times out, the caller's context ends or the client closes; Err is then
// errSendAborted. Deadline and Value are the caller context's.
type sendCtx waiter

func (s *sendCtx) Deadline() (time.Time, bool) { return s.ctx.Deadline() }
func (s *sendCtx) Done() <-chan struct{}       { return s.abort }
func (s *sendCtx) Value(key any) any           { return s.ctx.Value(key) }

func (s *sendCtx) Err() error {
	select {
	case <-s.abort:
		return errSendAborted
	default:
		return nil
	}
}
