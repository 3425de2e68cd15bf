package sql

import (
	"slices"

	"github.com/lockstepdb/lockstep/sql/plan"
	pg "github.com/pganalyze/pg_query_go/v6"
)

// Views over views (plan version 3; plan/viewinput.go): a view may name another view in
// FROM, or as a side of a join. A TUMBLE or HOP view with EMIT ON WINDOW CLOSE offers
// final rows, read as a stream whose event time is its window_end (or window_start, or
// a grouped event-time column) column; an aggregate over them that groups by that column
// emits each group once, when the watermark passes its time. Any other view's rows
// change: only an aggregate that retracts exactly (count, sum and avg of integers)
// reads them.

// offer returns what the view s offers: from its plan when this script defines it, else
// from the catalogue's schema.
func (c *compiler) offer(s *plan.Schema) *plan.ViewOffer {
	for i := range c.p.Views {
		if c.p.Views[i].Name == s.Name {
			return c.p.Views[i].Offer()
		}
	}
	if s.Offer != nil {
		return s.Offer
	}
	return &plan.ViewOffer{TimeCol: -1}
}

// viewInput returns the schema a view reads the view s as (its event-time column set
// for final rows) and how it reads it.
func (c *compiler) viewInput(s *plan.Schema) (*plan.Schema, *plan.ViewInput) {
	o := c.offer(s)
	in := *s
	in.Columns, in.Offer, in.EventTime = slices.Clone(s.Columns), nil, -1
	if !o.Final || o.TimeCol < 0 {
		return &in, &plan.ViewInput{Updating: true}
	}
	in.EventTime = o.TimeCol
	return &in, &plan.ViewInput{LagMs: o.LagMs}
}

// checkOverJoinOrView finishes an aggregated view over a join or a view: an aggregate
// over a join groups by a join key; an aggregate over a view's final rows that groups by
// their event-time column emits each group once, when the watermark passes it (a window
// of 1 ms over that time).
func (c *compiler) checkOverJoinOrView(v *plan.View, sel *pg.SelectStmt, st statement) error {
	if v.Pair != nil && (len(v.Aggs) > 0 || v.Having != nil) && !v.GroupsByJoinKey() {
		return c.src.errAt(ErrUnsupported, location(sel.TargetList[0]), "an aggregate over a join must GROUP BY a join key column (%s or %s), so that each group's pairs meet on one partition",
			v.Input.Columns[v.Pair.LeftKey].Name, v.Pair.Right.Columns[v.Pair.RightKey].Name)
	}
	if v.Pair != nil && len(v.Aggs) > 0 {
		v.Pair.LateByFreed = true // version 3 anyway
	}
	if v.From == nil || v.From.Updating || v.Pair != nil || v.Window != nil || !v.Aggregated() {
		return nil
	}
	for _, g := range v.GroupBy {
		if g.Op == plan.OpCol && g.Col == v.Input.EventTime {
			v.Window = &plan.Window{Kind: plan.WindowTumble, SizeMs: 1}
			if st.emit == "" {
				v.Emit = plan.EmitOnClose
			}
			return nil
		}
	}
	return nil
}
