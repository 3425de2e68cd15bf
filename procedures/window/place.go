package window

import (
	"slices"

	"github.com/lockstepdb/lockstep/partition"
)

// placeFixed adds a record to every open Tumbling or Hopping window it falls in and
// reports whether there was one.
func (a *Aggregate[R, S]) placeFixed(tx *partition.Tx, key []byte, t int64, rec R, wm int64) (bool, error) {
	var buf [8]Window
	placed := false
	for _, w := range a.cfg.Assigner.Assign(t, buf[:0]) {
		if a.closed(w.End, wm) {
			continue
		}
		placed = true
		st, ok, err := a.load(tx, key, w.Start)
		if err != nil {
			return false, err
		}
		if !ok {
			st = windowState[S]{End: w.End, Value: a.cfg.Add(a.cfg.Init(), rec)}
			if err := a.create(tx, key, w.Start, &st); err != nil {
				return false, err
			}
			continue
		}
		if err := a.update(tx, key, w.Start, &st, rec); err != nil {
			return false, err
		}
	}
	return placed, nil
}

// update adds a record to an existing window; a window that has fired emits its next
// revision.
func (a *Aggregate[R, S]) update(tx *partition.Tx, key []byte, start int64, st *windowState[S], rec R) error {
	st.Value = a.cfg.Add(st.Value, rec)
	if st.Emitted > 0 {
		if err := a.emit(tx, key, start, st, false, false); err != nil {
			return err
		}
		st.Emitted++
	}
	return a.save(tx, key, start, st)
}

// openSession is a stored session of one key.
type openSession[S any] struct {
	start int64
	st    windowState[S]
}

// placeSession merges a record's window [t, t+Gap) with the open sessions of its key that
// it overlaps and reports whether the result is open. The merged session keeps the
// identity (start, revisions) of the session it starts with, if any; the other merged
// sessions are dropped, and those that had emitted results emit a retraction.
func (a *Aggregate[R, S]) placeSession(tx *partition.Tx, key []byte, t int64, rec R, wm int64) (bool, error) {
	own := a.cfg.Assigner.Assign(t, nil)[0]
	near, err := a.overlapping(tx, key, own)
	if err != nil {
		return false, err
	}
	merged := own
	for _, s := range near {
		merged.Start = min(merged.Start, s.start)
		merged.End = max(merged.End, s.st.End)
	}
	if a.closed(merged.End, wm) {
		return false, nil // no open session overlaps and the record's own window is closed
	}
	if len(near) == 1 && near[0].start == merged.Start && near[0].st.End == merged.End {
		return true, a.update(tx, key, merged.Start, &near[0].st, rec) // inside one session
	}
	next := windowState[S]{End: merged.End}
	for i := range near {
		s := &near[i]
		if err := a.drop(tx, key, s.start, &s.st); err != nil {
			return false, err
		}
		if i == 0 && s.start == merged.Start {
			next.Value = s.st.Value
		} else {
			if i == 0 {
				// Not s's value itself: a retraction emits it, and Merge may modify its a.
				next.Value = a.cfg.Init()
			}
			next.Value = a.cfg.Merge(next.Value, s.st.Value)
		}
		if s.start == merged.Start {
			next.Emitted = s.st.Emitted // the survivor
		} else if s.st.Emitted > 0 {
			if err := a.emit(tx, key, s.start, &s.st, true, true); err != nil {
				return false, err
			}
		}
	}
	if len(near) == 0 {
		next.Value = a.cfg.Init()
	}
	next.Value = a.cfg.Add(next.Value, rec)
	if next.Emitted > 0 {
		if err := a.emit(tx, key, merged.Start, &next, false, false); err != nil {
			return false, err
		}
		next.Emitted++
	}
	return true, a.create(tx, key, merged.Start, &next)
}

// overlapping returns the stored sessions of key that overlap w, by ascending start.
// Stored sessions of one key are disjoint, so their ends ascend with their starts: the
// scan walks back from the last session starting before w ends and stops at the first
// that ends before w starts.
func (a *Aggregate[R, S]) overlapping(tx *partition.Tx, key []byte, w Window) ([]openSession[S], error) {
	lo, _ := keyRange(key)
	var out []openSession[S]
	var bad error
	err := tx.Scan(a.tables.State, partition.ScanOptions{Start: lo, End: stateKey(key, w.End), Reverse: true},
		func(k, v []byte) bool {
			var s openSession[S]
			if _, s.start, bad = parseStateKey(k); bad != nil {
				return false
			}
			if bad = a.decodeState(v, &s.st); bad != nil {
				return false
			}
			if s.st.End <= w.Start {
				return false
			}
			out = append(out, s)
			return true
		})
	if err == nil {
		err = bad
	}
	slices.Reverse(out)
	return out, err
}
