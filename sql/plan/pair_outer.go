package plan

import (
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
)

// Outer stream–stream joins (plan version 4: PairJoin.LeftOuter, RightOuter). A row of
// an outer side is kept, as any row of a bounded side, until the join frees it; while it
// has paired with no row of the other side (by ON), its n.pairs key is also a row of
// table n.unmatched. A pair found later, by either side's arrival, deletes that row.
// When the join frees the row (its expiry before the free horizon: the watermark has
// passed the last time a partner could have), a row still unmatched is published as a
// view row with the other side's columns NULL, keyed by its record alone, and the
// unmatched row is deleted: so every outer-side row that pairs with nothing is published
// once, on every replica alike, and its state is freed then. A row of an outer side
// whose join column is NULL pairs with nothing: it is published padded when handled.

// SuffixUnmatched names the table of an outer join's rows not yet paired.
const SuffixUnmatched = ".unmatched"

// validateOuter checks an outer join: ON given, a time bound that frees each outer
// side's rows (else none would ever be known unmatched), no aggregate, grouping, window
// side, view side or bound by a column.
func (v *View) validateOuter() error {
	j := v.Pair
	if !j.outer() {
		if j.On != nil {
			return fmt.Errorf("%w: ON apart from WHERE in an inner join", ErrBadPlan)
		}
		return nil
	}
	switch {
	case j.On == nil:
		return fmt.Errorf("%w: an outer join needs its ON condition", ErrBadPlan)
	case v.Aggregated() || v.Having != nil:
		return fmt.Errorf("%w: an outer join of two streams does not aggregate", ErrBadPlan)
	case j.LeftWindow != nil || j.RightWindow != nil || j.RightFrom != nil || v.From != nil || j.LeftUntil != nil || j.RightUntil != nil:
		return fmt.Errorf("%w: an outer join of two streams joins streams by constant time bounds", ErrBadPlan)
	case j.LeftOuter && !j.HasHi:
		return fmt.Errorf("%w: a LEFT or FULL join of two streams needs an upper bound on right time − left time", ErrBadPlan)
	case j.RightOuter && !j.HasLo:
		return fmt.Errorf("%w: a RIGHT or FULL join of two streams needs a lower bound on right time − left time", ErrBadPlan)
	}
	if err := j.On.prepare(v.InputTypes()); err != nil {
		return err
	}
	if j.On.Type != TypeBoolean && j.On.Type != TypeNull {
		return fmt.Errorf("%w: ON is %s", ErrBadPlan, j.On.Type)
	}
	return nil
}

// on evaluates the join's own ON over a pair row (outer joins; inner joins filter by
// Where alone): NULL is false.
func (v *View) on(row []any) (bool, error) {
	if v.Pair.On == nil {
		return true, nil
	}
	ok, err := v.Pair.On.Eval(row)
	if err != nil {
		return false, fmt.Errorf("view %s: ON: %w", v.Name, err)
	}
	return ok == true, nil
}

// nulls returns n NULLs.
func nulls(n int) []any { return make([]any, n) }

// sideWidth is the number of columns of side's part of the pair row.
func (v *View) sideWidth(side byte) int {
	if side == sideLeft {
		return v.rightOffset()
	}
	return len(v.InputTypes()) - v.rightOffset()
}

// publishPadded publishes the row of outer side me that paired with nothing, the other
// side's columns NULL, if it passes WHERE: keyed by its record, the other record's part
// of the key empty (no record has an empty key).
func (v *View) publishPadded(tx *partition.Tx, me *pairSide) error {
	var row []any
	var key []byte
	if me.side == sideLeft {
		row = append(append(row, me.cols...), nulls(v.sideWidth(sideRight))...)
		key = appendTime(appendEscaped(appendTime(appendEscaped(nil, me.key), int64(me.off)), nil), 0)
	} else {
		row = append(append(row, nulls(v.sideWidth(sideLeft))...), me.cols...)
		key = appendTime(appendEscaped(appendTime(appendEscaped(nil, nil), 0), me.key), int64(me.off))
	}
	if ok, err := v.where(row); err != nil || !ok {
		return err
	}
	out, err := v.output(row)
	if err != nil {
		return err
	}
	return v.upsert(tx, key, out, me.time)
}

// freeUnmatched is called for each kept row the join frees (sk its n.pairs key): an
// outer side's row still unmatched is published padded, and its n.unmatched row deleted.
func (v *View) freeUnmatched(tx *partition.Tx, sk []byte) error {
	if !v.Pair.outer() {
		return nil
	}
	if _, ok := tx.Get(v.Name+SuffixUnmatched, sk); !ok {
		return nil
	}
	_, rest, ok := cutEscaped(sk)
	if !ok || len(rest) < 1 {
		return fmt.Errorf("%w: %s key", ErrCorrupt, v.Name+SuffixUnmatched)
	}
	val, ok := tx.Get(v.pairsTable(rest[0]), sk)
	if !ok {
		return fmt.Errorf("%w: %s row without its %s row", ErrCorrupt, v.Name+SuffixUnmatched, v.pairsTable(rest[0]))
	}
	me, err := v.decodePartner(rest[0], rest[1:], val, allCols) // rare: every column
	if err != nil {
		return err
	}
	if err := v.publishPadded(tx, &me); err != nil {
		return err
	}
	return tx.Delete(v.Name+SuffixUnmatched, sk)
}
