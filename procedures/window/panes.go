package window

import (
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
)

// Panes (Config.Panes). A Hopping window of Size is Size/Slide panes of Slide, and each
// pane of a key has one state row, under the key and the pane's start in the State
// table. A record updates its pane alone. The windows still have their rows in the Fire
// queue, written when a pane is created for each window holding it that is still open,
// so they fire in the same order as without panes; with no allowed lateness a window
// closes as it fires, so there is no Close row. Firing merges the window's panes, and
// drops the first: every other window holding that pane ended before this one and has
// fired. A window's value is then the merge of what its panes took while it was open:
// a record that came after it fired went to a pane it had already read, or to none.

// checkPanes reports whether an operator with assigner, allowed lateness and a Merge
// (hasMerge) can keep its state in panes.
func checkPanes(assigner Assigner, lateness int64, hasMerge bool) error {
	h, ok := assigner.(Hopping)
	switch {
	case !ok:
		return fmt.Errorf("%w: panes need hopping windows", ErrBadConfig)
	case h.Size%h.Slide != 0:
		return fmt.Errorf("%w: panes need a hopping size (%d) that is a multiple of the slide (%d)", ErrBadConfig, h.Size, h.Slide)
	case lateness != 0:
		return fmt.Errorf("%w: panes need no allowed lateness, not %d", ErrBadConfig, lateness)
	case !hasMerge:
		return fmt.Errorf("%w: panes need Merge", ErrBadConfig)
	}
	return nil
}

// placePane adds a record to its pane, and reports whether a window holding the pane is
// open. A new pane writes the Fire rows of its open windows.
func (a *Aggregate[R, S]) placePane(tx *partition.Tx, key []byte, t int64, rec R, wm int64) (bool, error) {
	var buf [8]Window
	wins := a.cfg.Assigner.Assign(t, buf[:0])
	open := wins[:0]
	for _, w := range wins {
		if !a.closed(w.End, wm) {
			open = append(open, w)
		}
	}
	if len(open) == 0 {
		return false, nil
	}
	pane := floorTo(t, a.panes)
	st, ok, err := a.load(tx, key, pane)
	if err != nil {
		return false, err
	}
	if ok {
		st.Value = a.cfg.Add(st.Value, rec)
		return true, a.save(tx, key, pane, &st)
	}
	st = windowState[S]{End: pane + a.panes, Value: a.cfg.Add(a.cfg.Init(), rec)}
	if err := a.save(tx, key, pane, &st); err != nil {
		return false, err
	}
	for _, w := range open {
		if err := tx.Put(a.tables.Fire, queueKey(w.End, key, w.Start), nil); err != nil {
			return false, err
		}
	}
	return true, nil
}

// firePanes emits the Final result of the window of key starting at start, due at at,
// from its panes, and drops its first pane and its Fire row.
func (a *Aggregate[R, S]) firePanes(tx *partition.Tx, at int64, key []byte, start int64) error {
	if at != start+a.size {
		return fmt.Errorf("%w: %s has %q@%d at %d, its end is %d", ErrCorrupt, a.tables.Fire, key, start, at, start+a.size)
	}
	st := windowState[S]{End: at, Value: a.cfg.Init()}
	found := false
	for p := start; p < at; p += a.panes {
		ps, ok, err := a.load(tx, key, p)
		if err != nil {
			return err
		}
		if ok {
			st.Value, found = a.cfg.Merge(st.Value, ps.Value), true
		}
	}
	if !found {
		return fmt.Errorf("%w: %s names %q@%d, which has no pane", ErrCorrupt, a.tables.Fire, key, start)
	}
	if err := a.emit(tx, key, start, &st, true, false); err != nil {
		return err
	}
	if err := tx.Delete(a.tables.Fire, queueKey(at, key, start)); err != nil {
		return err
	}
	return tx.Delete(a.tables.State, stateKey(key, start))
}
