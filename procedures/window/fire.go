package window

import (
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
)

// queueBatch is how many queue rows one scan collects before they are handled (a scan's
// callback must not write), which bounds the memory of a pass however many windows are
// due.
const queueBatch = 128

// closeUpTo fires every window with End ≤ wm that has not fired, then closes every window
// with End + AllowedLateness ≤ wm, each queue in its key order (time, key, start).
func (a *Aggregate[R, S]) closeUpTo(tx *partition.Tx, wm int64) error {
	if wm == NoWatermark {
		return nil
	}
	if err := a.drain(tx, a.tables.Fire, wm, a.fire); err != nil {
		return err
	}
	if a.panes > 0 {
		return nil // no Close rows: a window closes as it fires
	}
	return a.drain(tx, a.tables.Close, wm, a.close)
}

// drain calls handle for every row of queue with time ≤ wm, in key order. handle deletes
// the row (or fails), so each scan starts over at the front of the queue.
func (a *Aggregate[R, S]) drain(tx *partition.Tx, queue string, wm int64, handle func(tx *partition.Tx, at int64, key []byte, start, wm int64) error) error {
	var buf [8]byte
	bound := appendTime(buf[:0], wm+1)
	type due struct {
		at    int64
		key   []byte
		start int64
	}
	var batch []due // allocated at the first due row: most calls find none
	for {
		batch = batch[:0]
		var bad error
		err := tx.Scan(queue, partition.ScanOptions{End: bound, Limit: queueBatch}, func(k, _ []byte) bool {
			var d due
			d.at, d.key, d.start, bad = parseQueueKey(k)
			batch = append(batch, d)
			return bad == nil
		})
		if err == nil {
			err = bad
		}
		if err != nil || len(batch) == 0 {
			return err
		}
		for _, d := range batch {
			if err := handle(tx, d.at, d.key, d.start, wm); err != nil {
				return err
			}
		}
	}
}

// fire emits a window's first result; a window that is also past its lateness closes at
// once, with that result Final.
func (a *Aggregate[R, S]) fire(tx *partition.Tx, at int64, key []byte, start, wm int64) error {
	if a.panes > 0 {
		return a.firePanes(tx, at, key, start)
	}
	st, err := a.mustLoad(tx, a.tables.Fire, at, key, start, 0)
	if err != nil {
		return err
	}
	final := a.closed(st.End, wm)
	if err := a.emit(tx, key, start, &st, final, false); err != nil {
		return err
	}
	if final {
		return a.drop(tx, key, start, &st)
	}
	if err := tx.Delete(a.tables.Fire, queueKey(st.End, key, start)); err != nil {
		return err
	}
	st.Emitted++
	return a.save(tx, key, start, &st)
}

// close emits a fired window's Final result and drops its state.
func (a *Aggregate[R, S]) close(tx *partition.Tx, at int64, key []byte, start, _ int64) error {
	st, err := a.mustLoad(tx, a.tables.Close, at, key, start, a.cfg.AllowedLateness)
	if err != nil {
		return err
	}
	if st.Emitted == 0 {
		// Every window due to close is due to fire first; fire runs before close.
		return fmt.Errorf("%w: %s %q@%d closes unfired", ErrCorrupt, a.tables.State, key, start)
	}
	if err := a.emit(tx, key, start, &st, true, false); err != nil {
		return err
	}
	return a.drop(tx, key, start, &st)
}

// mustLoad loads the state of the window that a row of queue names, due at time at,
// which must be the window's end plus offset: otherwise deleting the window's queue rows
// would not delete this one.
func (a *Aggregate[R, S]) mustLoad(tx *partition.Tx, queue string, at int64, key []byte, start, offset int64) (windowState[S], error) {
	st, ok, err := a.load(tx, key, start)
	switch {
	case err != nil:
	case !ok:
		err = fmt.Errorf("%w: %s names %q@%d, which has no state", ErrCorrupt, queue, key, start)
	case st.End+offset != at:
		err = fmt.Errorf("%w: %s has %q@%d at %d, its state says %d", ErrCorrupt, queue, key, start, at, st.End+offset)
	}
	return st, err
}
