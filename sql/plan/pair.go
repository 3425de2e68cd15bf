package plan

import (
	"fmt"
	"strings"
)

// PairJoin is a stream–stream join (plan version 2): every row of the view's input
// stream (the left side) is paired with every row of the Right stream whose key column
// equals its own and that passes the view's Where (which holds the whole ON
// condition). The pair row that Where, GroupBy and Output read is the left row, then
// (with LeftWindow) its window_start and window_end, then the right row, then (with
// RightWindow) its window bounds.
//
// The time bounds say how far apart in event time two rows of a pair can be, as d =
// right time − left time: d ≥ LoMs when HasLo, d ≤ HiMs when HasHi. They are implied by
// the ON condition (the compiler derives them from it; Where still checks every pair)
// and they are what lets the join forget: a left row is freed once the watermark passes
// its time + HiMs, a right row once it passes its time − LoMs, and a row that comes
// behind the watermark when the other side frees is late (docs/sql.md, "Stream–stream
// join"). Without bounds on a side, that side's rows are kept for ever.
type PairJoin struct {
	// Right is the schema of the right-hand stream (KindStream).
	Right Schema `msgpack:"right"`
	// LeftKey and RightKey are the equi-join columns of the left (Input) and Right rows:
	// rows are repartitioned by their value and paired when the values are equal.
	LeftKey  int `msgpack:"lk"`
	RightKey int `msgpack:"rk"`
	// LeftWindow and RightWindow, when set, are TUMBLE windows of each side over its
	// event time: they add window_start and window_end after that side's columns.
	LeftWindow  *Window `msgpack:"lw,omitempty"`
	RightWindow *Window `msgpack:"rw,omitempty"`
	// HasLo, LoMs, HasHi, HiMs bound right time − left time, in ms.
	HasLo bool  `msgpack:"hlo,omitempty"`
	LoMs  int64 `msgpack:"lo,omitempty"`
	HasHi bool  `msgpack:"hhi,omitempty"`
	HiMs  int64 `msgpack:"hi,omitempty"`
	// RightFrom, if set, makes the right side a view's changelog (plan version 3): Right
	// is then the view's schema, read as ViewInput says (final rows only).
	RightFrom *ViewInput `msgpack:"rfrom,omitempty"`
	// LeftUntil and RightUntil, if set, bound by a column (plan version 3): a row of
	// that side pairs only with rows of the other side whose event time is at most its
	// column's value plus OffMs (ON holds other.time <= this.col + OffMs), so it is
	// freed once the watermark passes that value, and a row whose column is NULL pairs
	// with none.
	LeftUntil  *Until `msgpack:"luntil,omitempty"`
	RightUntil *Until `msgpack:"runtil,omitempty"`
	// LateByFreed (plan version 3) judges a row late only when the other side has freed
	// a row that could have been its partner: one whose expiry is at or after the row's
	// time (the highest expiry each side has freed is kept in n.stamp). Without it a row
	// is late whenever its time is before its stamp (version 2's rule, kept for the
	// plans written before). Both make the view the batch join less the late rows; this
	// one drops far fewer rows out of order.
	LateByFreed bool `msgpack:"lbf,omitempty"`
	// LeftOuter and RightOuter (plan version 4) make the join LEFT (a left row that pairs
	// with no right row is a view row with NULL right columns), RIGHT, or both: FULL
	// OUTER. A row of an outer side that has paired with none when the join frees it
	// (the watermark past its expiry) is published then, padded with NULLs, once. On is
	// then the ON condition, which decides what pairs; the view's Where is WHERE alone,
	// applied to pairs and padded rows alike (for an inner join Where holds both).
	LeftOuter  bool  `msgpack:"lout,omitempty"`
	RightOuter bool  `msgpack:"rout,omitempty"`
	On         *Expr `msgpack:"on,omitempty"`
	// SideTables (plan version 6) keeps the right side's rows in table n.rpairs and the
	// left's in n.pairs; before, both sides' in n.pairs. A row looks its partners up in
	// the other side's table only: when one side is small (q7: a stream joined with a
	// view of its per-window maximum), each lookup descends a small tree instead of one
	// holding every row of the large side.
	SideTables bool `msgpack:"st,omitempty"`
}

// pairsTable is the table that keeps side's rows (SideTables).
func (v *View) pairsTable(side byte) string {
	if side == sideRight && v.Pair.SideTables {
		return v.Name + SuffixRightPairs
	}
	return v.Name + SuffixPairs
}

// keptTables names the tables that keep the join's rows, for EXPLAIN.
func (v *View) keptTables() string {
	if v.Pair.SideTables {
		return v.Name + SuffixPairs + ", " + v.Name + SuffixRightPairs + ", " + v.Name + SuffixExpiry
	}
	return v.Name + SuffixPairs + ", " + v.Name + SuffixExpiry
}

// outer reports whether the join is an outer one.
func (j *PairJoin) outer() bool { return j.LeftOuter || j.RightOuter }

// outerSide reports whether rows of side are kept until matched or padded.
func (j *PairJoin) outerSide(side byte) bool {
	return side == sideLeft && j.LeftOuter || side == sideRight && j.RightOuter
}

// JoinWord is the join's kind as SQL writes it.
func (j *PairJoin) JoinWord() string {
	switch {
	case j.LeftOuter && j.RightOuter:
		return "FULL OUTER JOIN"
	case j.LeftOuter:
		return "LEFT OUTER JOIN"
	case j.RightOuter:
		return "RIGHT OUTER JOIN"
	}
	return "JOIN"
}

// Until is a join row's bound by one of its columns (PairJoin.LeftUntil).
type Until struct {
	// Col is the timestamp column, an index into the side's row.
	Col int `msgpack:"c"`
	// OffMs is added to its value.
	OffMs int64 `msgpack:"o"`
}

// bounded reports whether the join frees rows: some time bound.
func (j *PairJoin) bounded() bool {
	return j.HasLo || j.HasHi || j.LeftUntil != nil || j.RightUntil != nil
}

// leftFreed and rightFreed report whether the other side forgets rows, so that a late
// row of this side may have lost partners.
func (j *PairJoin) leftFreed() bool  { return j.HasLo || j.RightUntil != nil }
func (j *PairJoin) rightFreed() bool { return j.HasHi || j.LeftUntil != nil }

// GroupsByJoinKey reports whether a join view's GROUP BY holds a join key column, so
// that every pair of a group is found on one partition.
func (v *View) GroupsByJoinKey() bool {
	for _, g := range v.GroupBy {
		if g.Op == OpCol && (g.Col == v.Pair.LeftKey || g.Col == v.rightOffset()+v.Pair.RightKey) {
			return true
		}
	}
	return false
}

// sideTypes returns a side's column types in the pair row: its columns, then its
// window's bounds.
func sideTypes(s *Schema, w *Window) []Type {
	var ts []Type
	for _, c := range s.Columns {
		ts = append(ts, c.Type)
	}
	if w != nil {
		ts = append(ts, TypeTimestamp, TypeTimestamp)
	}
	return ts
}

// rightOffset is the index of the right side's first column in the pair row.
func (v *View) rightOffset() int {
	n := len(v.Input.Columns)
	if v.Pair.LeftWindow != nil {
		n += 2
	}
	return n
}

// validatePair checks a stream–stream join view.
func (v *View) validatePair() error {
	j := v.Pair
	if err := j.Right.Validate(); err != nil {
		return err
	}
	switch {
	case (v.Input.Kind != KindStream && v.From == nil) || (j.Right.Kind != KindStream && j.RightFrom == nil) || v.Join != nil:
		return fmt.Errorf("%w: stream–stream join of %s %s with %s %s", ErrBadPlan, v.Input.Kind, v.Input.Name, j.Right.Kind, j.Right.Name)
	case (v.From != nil && v.From.Updating) || (j.RightFrom != nil && j.RightFrom.Updating):
		return fmt.Errorf("%w: a join side that is a view must have final rows", ErrBadPlan)
	case v.Window != nil:
		return fmt.Errorf("%w: a stream–stream join has no window of its own", ErrBadPlan)
	case (len(v.Aggs) > 0 || v.Having != nil) && !v.GroupsByJoinKey():
		return fmt.Errorf("%w: an aggregate over a join must GROUP BY a join key column", ErrBadPlan)
	case j.LeftKey < 0 || j.LeftKey >= len(v.Input.Columns) || j.RightKey < 0 || j.RightKey >= len(j.Right.Columns) ||
		v.Input.Columns[j.LeftKey].Type != j.Right.Columns[j.RightKey].Type || v.Input.Columns[j.LeftKey].Type == TypeDouble:
		return fmt.Errorf("%w: join key columns %d and %d", ErrBadPlan, j.LeftKey, j.RightKey)
	case (j.bounded() || j.LeftWindow != nil || j.RightWindow != nil) && (v.Input.EventTime < 0 || j.Right.EventTime < 0):
		return fmt.Errorf("%w: a time-bounded join needs both sides' event-time columns", ErrBadPlan)
	case j.HasLo && j.HasHi && j.LoMs > j.HiMs:
		return fmt.Errorf("%w: join time bounds %d > %d ms", ErrBadPlan, j.LoMs, j.HiMs)
	case (j.HasLo && !checkSpanMs(j.LoMs)) || (j.HasHi && !checkSpanMs(j.HiMs)):
		return fmt.Errorf("%w: join time bounds %d, %d ms out of range", ErrBadPlan, j.LoMs, j.HiMs)
	}
	if err := validateFrom(&j.Right, j.RightFrom); err != nil {
		return err
	}
	if err := v.validateOuter(); err != nil {
		return err
	}
	for _, u := range []struct {
		u *Until
		s *Schema
	}{{j.LeftUntil, &v.Input}, {j.RightUntil, &j.Right}} {
		if u.u != nil && (u.u.Col < 0 || u.u.Col >= len(u.s.Columns) || u.s.Columns[u.u.Col].Type != TypeTimestamp || !checkSpanMs(u.u.OffMs) || u.s.EventTime < 0) {
			return fmt.Errorf("%w: join bound by column %d of %s", ErrBadPlan, u.u.Col, u.s.Name)
		}
	}
	for _, w := range []*Window{j.LeftWindow, j.RightWindow} {
		if w != nil && (w.Kind != WindowTumble || w.SizeMs <= 0 || !checkSpanMs(w.SizeMs)) {
			return fmt.Errorf("%w: a join side's window must be a TUMBLE of a positive size", ErrBadPlan)
		}
	}
	return nil
}

// maxSpanMs bounds a join's time bounds and window sizes: a year.
const maxSpanMs = 366 * 24 * 3600 * 1000

func checkSpanMs(ms int64) bool { return ms >= -maxSpanMs && ms <= maxSpanMs }

// explainPair describes a stream–stream join view's processors.
func (v *View) explainPair(b *strings.Builder, in []string, where string, outs func([]string) string) {
	j := v.Pair
	for _, side := range []struct {
		name string
		s    *Schema
		key  int
		from *ViewInput
	}{{v.Name + SuffixLeft, &v.Input, j.LeftKey, v.From}, {v.Name + SuffixRight, &j.Right, j.RightKey, j.RightFrom}} {
		fmt.Fprintf(b, "  %s: %s %s → stream %s, repartitioned by %s", side.name, side.s.Kind, side.s.Name, v.Name+SuffixByKey, side.s.Columns[side.key].Name)
		if j.bounded() {
			b.WriteString(", watermark: " + watermarkText(side.s, side.from))
		}
		b.WriteString("\n")
	}
	bound := func(has bool, ms int64, inf string) string {
		if !has {
			return inf
		}
		return fmt.Sprintf("%d ms", ms)
	}
	keep := fmt.Sprintf("right time − left time in [%s, %s]", bound(j.HasLo, j.LoMs, "−∞"), bound(j.HasHi, j.HiMs, "+∞"))
	for _, u := range []struct {
		u    *Until
		side string
		s    *Schema
	}{{j.LeftUntil, "left", &v.Input}, {j.RightUntil, "right", &j.Right}} {
		if u.u != nil {
			keep += fmt.Sprintf(", a %s row until %s.%s + %d ms", u.side, u.s.Name, u.s.Columns[u.u.Col].Name, u.u.OffMs)
		}
	}
	distinct := ""
	env := in
	if len(v.GroupBy) > 0 {
		var group []string
		for _, g := range v.GroupBy {
			group = append(group, g.format(in))
		}
		distinct, env = ", one row per ("+strings.Join(group, ", ")+")", group
		for _, a := range v.Aggs {
			arg := "*"
			if a.Arg != nil {
				arg = a.Arg.format(in)
			}
			env = append(env, a.Func.String()+"("+arg+")")
		}
		if len(v.Aggs) > 0 {
			distinct = ", aggregated per (" + strings.Join(group, ", ") + ") in table " + v.Name + SuffixState
		}
	}
	if j.outer() {
		keep += fmt.Sprintf(", rows not yet paired: table %s, published NULL-padded when freed", v.Name+SuffixUnmatched)
		if j.On != nil {
			keep += ", ON " + j.On.format(in)
		}
	}
	fmt.Fprintf(b, "  %s: %s %s ON %s = %s, %s (kept rows: tables %s)%s%s, SELECT %s → table %s, changelog %s, late rows → %s\n",
		v.Name+SuffixJoin, j.JoinWord(), j.Right.Name, v.Input.Columns[j.LeftKey].Name, j.Right.Columns[j.RightKey].Name, keep,
		v.keptTables(), where, distinct, outs(env), v.Name, v.Name, v.Name+SuffixLate)
}
