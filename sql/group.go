package sql

import (
	"strings"

	"github.com/lockstepdb/lockstep/sql/plan"
	pg "github.com/pganalyze/pg_query_go/v6"
)

// groupScope resolves the expressions of an aggregated view's select list and HAVING:
// GROUP BY expressions, aggregates and the window's bounds, over the group row
// (plan.View.GroupRowTypes).
type groupScope struct {
	src    *source
	in     *inputScope
	v      *plan.View
	groups []*plan.Expr
}

// slot returns the reference to group-row column i.
func (g *groupScope) slot(i int) *plan.Expr {
	return plan.ColumnRef(i, g.v.GroupRowTypes()[i])
}

func (g *groupScope) column(q, name string, at int32) (*plan.Expr, error) {
	if g.v.Window != nil && q == "" && (name == windowStart || name == windowEnd) {
		i := len(g.groups) + len(g.v.Aggs)
		if name == windowEnd {
			i++
		}
		return g.slot(i), nil
	}
	if _, err := g.in.column(q, name, at); err != nil {
		return nil, err
	}
	return nil, g.src.errAt(ErrDefinition, at, "column %s must appear in GROUP BY or be used in an aggregate", name)
}

func (g *groupScope) match(c *converter, n *pg.Node) *plan.Expr {
	e, err := (&converter{src: g.src, scope: g.in}).expr(n)
	if err != nil {
		return nil
	}
	for i, x := range g.groups {
		if x.Equal(e) {
			return g.slot(i)
		}
	}
	return nil
}

func (g *groupScope) aggregate(c *converter, fc *pg.FuncCall) (*plan.Expr, error) {
	name := funcName(fc)
	f, _ := plan.ParseAgg(name)
	if fc.Over != nil || fc.AggFilter != nil || len(fc.AggOrder) > 0 || fc.AggWithinGroup {
		return nil, g.src.errAt(ErrUnsupported, fc.Location, "%s: OVER, FILTER and ORDER BY are not supported", name)
	}
	a := plan.Agg{Func: f, Distinct: fc.AggDistinct}
	argType := plan.TypeNull
	switch {
	case fc.AggStar:
	case len(fc.Args) != 1:
		return nil, g.src.errAt(ErrDefinition, fc.Location, "%s takes one argument", name)
	default:
		// The argument is over input rows; an aggregate inside it is refused there.
		arg, err := (&converter{src: g.src, scope: g.in}).expr(fc.Args[0])
		if err != nil {
			return nil, err
		}
		a.Arg, argType = arg, arg.Type
		if argType == plan.TypeNull {
			return nil, g.src.errAt(ErrType, location(fc.Args[0]), "%s(NULL): cast the NULL to a type", name)
		}
	}
	t, err := plan.AggResultType(f, argType, fc.AggStar)
	if err != nil {
		return nil, g.src.errAt(ErrType, fc.Location, "%v", err)
	}
	a.Type = t
	if g.v.From != nil && g.v.From.Updating && !a.Retracts() {
		return nil, g.src.errAt(ErrUnsupported, fc.Location, "%s over the changing rows of view %s: only count, and sum and avg of integers, take a changed row back exactly", name, g.in.schema.Name)
	}
	for i := range g.v.Aggs {
		if x := &g.v.Aggs[i]; x.Func == a.Func && x.Distinct == a.Distinct && x.Arg.Equal(a.Arg) {
			return g.slot(len(g.groups) + i), nil
		}
	}
	g.v.Aggs = append(g.v.Aggs, a)
	return g.slot(len(g.groups) + len(g.v.Aggs) - 1), nil
}

// aggregate plans an aggregated view: GROUP BY, the select list over the group row,
// HAVING.
func (c *compiler) aggregate(v *plan.View, in *inputScope, sel *pg.SelectStmt) error {
	g := &groupScope{src: c.src, in: in, v: v}
	ic := &converter{src: c.src, scope: in}
	windowGrouped := false
	for _, item := range sel.GroupClause {
		n := item
		if k := item.GetAConst(); k != nil {
			iv, ok := k.Val.(*pg.A_Const_Ival)
			if !ok || iv.Ival.Ival < 1 || int(iv.Ival.Ival) > len(sel.TargetList) {
				return c.src.errAt(ErrDefinition, k.Location, "GROUP BY position is not in the select list")
			}
			n = sel.TargetList[iv.Ival.Ival-1].GetResTarget().Val
		}
		if cr := n.GetColumnRef(); cr != nil && len(cr.Fields) == 1 {
			name := cr.Fields[0].GetString_().GetSval()
			if v.Window != nil && (name == windowStart || name == windowEnd) {
				windowGrouped = true
				continue
			}
			if in.schema.Column(name) < 0 {
				for _, t := range sel.TargetList { // GROUP BY an output column's name
					if rt := t.GetResTarget(); rt.Name == name {
						n = rt.Val
					}
				}
			}
		}
		if _, ok := n.GetNode().(*pg.Node_GroupingSet); ok {
			return c.src.errAt(ErrUnsupported, location(item), "GROUPING SETS, ROLLUP and CUBE are not supported")
		}
		e, err := ic.expr(n)
		if err != nil {
			return err
		}
		dup := false
		for _, x := range g.groups {
			dup = dup || x.Equal(e)
		}
		if !dup {
			g.groups = append(g.groups, e)
		}
	}
	v.GroupBy = g.groups
	if v.Window != nil && !windowGrouped {
		return c.src.errAt(ErrDefinition, location(sel.FromClause[0]), "a windowed view must GROUP BY window_start (or window_end)")
	}
	// Aggregates are numbered as they are met, and group-row slots depend on their
	// count: convert everything once to collect them, then again for the final slots.
	gc := &converter{src: c.src, scope: g}
	for pass := 0; pass < 2; pass++ {
		v.Output, v.Schema.Columns = nil, nil
		for k, t := range sel.TargetList {
			rt := t.GetResTarget()
			if cr := rt.Val.GetColumnRef(); cr != nil {
				if _, star := cr.Fields[len(cr.Fields)-1].GetNode().(*pg.Node_AStar); star {
					return c.src.errAt(ErrDefinition, rt.Location, "SELECT * in an aggregated view: name the grouped columns")
				}
			}
			e, err := gc.expr(rt.Val)
			if err != nil {
				return err
			}
			if err := c.addColumn(v, outputName(rt, k), e, rt.Location); err != nil {
				return err
			}
		}
		if sel.HavingClause != nil {
			h, err := gc.expr(sel.HavingClause)
			if err != nil {
				return err
			}
			if h.Type != plan.TypeBoolean && h.Type != plan.TypeNull {
				return c.src.errAt(ErrType, location(sel.HavingClause), "HAVING must be boolean, not %s", h.Type)
			}
			v.Having = h
		}
	}
	if len(v.Output) == 0 {
		return c.src.errAt(ErrDefinition, -1, "view %s selects nothing", strings.TrimSpace(v.Name))
	}
	return nil
}
