package sql

import (
	"slices"

	"github.com/lockstepdb/lockstep/sql/plan"
	pg "github.com/pganalyze/pg_query_go/v6"
)

// Stream–stream joins: FROM a [AS x] JOIN b [AS y] ON x.k = y.k [AND time bounds], each
// side a stream or TUMBLE(stream, ts, size) (which adds that side's window_start and
// window_end). The ON condition is kept whole (it filters every pair, with WHERE); the
// compiler derives from it, for the join's state, how far apart in event time two rows
// of a pair can be: conjuncts comparing the sides' event-time columns plus or minus
// constant intervals (BETWEEN included), and equal window_start or window_end of two
// TUMBLEs of one size.

// pairSide is one side of a stream–stream join as FROM names it.
type pairSide struct {
	schema *plan.Schema
	names  []string
	window *plan.Window
	from   *plan.ViewInput // a view's final rows
}

func (c *compiler) pairSide(n *pg.Node) (*pairSide, error) {
	switch x := n.GetNode().(type) {
	case *pg.Node_RangeVar:
		s, ok := c.names[x.RangeVar.Relname]
		if !ok {
			return nil, c.src.errAt(ErrUnknown, x.RangeVar.Location, "stream or table %s", x.RangeVar.Relname)
		}
		ps := &pairSide{schema: s, names: []string{x.RangeVar.Relname}}
		if s.Kind == plan.KindView {
			ps.schema, ps.from = c.viewInput(s)
			if ps.from.Updating {
				return nil, c.src.errAt(ErrUnsupported, x.RangeVar.Location, "a join side that is a view must have final rows (a TUMBLE or HOP view with EMIT ON WINDOW CLOSE that selects window_end, window_start or its event-time column): the rows of %s change", s.Name)
			}
		}
		if x.RangeVar.Alias != nil {
			ps.names = append(ps.names, x.RangeVar.Alias.Aliasname)
		}
		return ps, nil
	case *pg.Node_RangeFunction:
		items := x.RangeFunction.Functions[0].GetList().GetItems()
		fc := items[0].GetFuncCall()
		if fc == nil || funcName(fc) != "tumble" || len(fc.Args) == 0 || fc.Args[0].GetColumnRef() == nil {
			return nil, c.src.errAt(ErrUnsupported, location(n), "a join side is a stream or TUMBLE(stream, event_time_column, size)")
		}
		name := fc.Args[0].GetColumnRef().Fields[0].GetString_().GetSval()
		s, ok := c.names[name]
		if !ok {
			return nil, c.src.errAt(ErrUnknown, location(fc.Args[0]), "stream %s", name)
		}
		if s.Kind != plan.KindStream {
			return nil, c.src.errAt(ErrUnsupported, location(fc.Args[0]), "TUMBLE over %s %s: windows are over streams", s.Kind, name)
		}
		w, err := c.windowFunc(fc, s)
		if err != nil {
			return nil, err
		}
		ps := &pairSide{schema: s, names: []string{name}, window: w}
		if x.RangeFunction.Alias != nil {
			ps.names = append(ps.names, x.RangeFunction.Alias.Aliasname)
		}
		return ps, nil
	}
	return nil, c.src.errAt(ErrUnsupported, location(n), "a join side is a stream or TUMBLE(stream, ...) by name (subqueries are not supported)")
}

// scopeSchema is the side's columns as the pair row holds them: its window's bounds
// after its columns.
func (p *pairSide) scopeSchema() *plan.Schema {
	s := *p.schema
	s.Columns = slices.Clone(s.Columns)
	if p.window != nil {
		s.Columns = append(s.Columns, plan.Column{Name: windowStart, Type: plan.TypeTimestamp}, plan.Column{Name: windowEnd, Type: plan.TypeTimestamp})
	}
	return &s
}

// pairJoin plans FROM a JOIN b over two streams.
func (c *compiler) pairJoin(je *pg.JoinExpr, ls, rs *pairSide, v *plan.View, where *pg.Node) (*inputScope, error) {
	leftOuter := je.Jointype == pg.JoinType_JOIN_LEFT || je.Jointype == pg.JoinType_JOIN_FULL
	rightOuter := je.Jointype == pg.JoinType_JOIN_RIGHT || je.Jointype == pg.JoinType_JOIN_FULL
	if je.Jointype != pg.JoinType_JOIN_INNER && !leftOuter && !rightOuter {
		return nil, c.src.errAt(ErrUnsupported, location(je.Rarg), "a join of two streams is JOIN, LEFT, RIGHT or FULL OUTER JOIN")
	}
	outer := leftOuter || rightOuter
	if outer && (ls.window != nil || rs.window != nil || ls.from != nil || rs.from != nil) {
		return nil, c.src.errAt(ErrUnsupported, location(je.Rarg), "an outer join of two streams joins streams (not views or TUMBLE windows) by time bounds")
	}
	lsch, rsch := ls.scopeSchema(), rs.scopeSchema()
	in := &inputScope{src: c.src, schema: lsch, names: ls.names, join: rsch, joinNames: rs.names}
	on, err := (&converter{src: c.src, scope: in}).expr(je.Quals)
	if err != nil {
		return nil, err
	}
	if on.Type != plan.TypeBoolean {
		return nil, c.src.errAt(ErrType, location(je.Quals), "ON must be boolean, not %s", on.Type)
	}
	nl := len(lsch.Columns)
	j := &plan.PairJoin{Right: *rs.schema, LeftKey: -1, RightKey: -1, LeftWindow: ls.window, RightWindow: rs.window}
	b := &bounds{}
	terms := conjuncts(on)
	if where != nil && !outer {
		// WHERE filters every pair as ON does: its terms bound the join's times too (not
		// an outer join's: there WHERE filters the padded rows too, after the join).
		w, err := (&converter{src: c.src, scope: in}).expr(where)
		if err != nil {
			return nil, err
		}
		for _, e := range conjuncts(w) {
			b.conjunct(e, ls, rs, nl)
		}
	}
	for _, e := range terms {
		if e.Op == plan.OpEq && j.LeftKey < 0 {
			l, r := e.Args[0], e.Args[1]
			if l.Op == plan.OpCol && l.Col >= nl {
				l, r = r, l
			}
			if l.Op == plan.OpCol && r.Op == plan.OpCol && l.Col < len(ls.schema.Columns) && r.Col >= nl && r.Col < nl+len(rs.schema.Columns) &&
				l.Type == r.Type && l.Type != plan.TypeDouble {
				j.LeftKey, j.RightKey = l.Col, r.Col-nl
				continue
			}
		}
		b.conjunct(e, ls, rs, nl)
	}
	if j.LeftKey < 0 {
		return nil, c.src.errAt(ErrUnsupported, location(je.Quals), "a join of two streams needs ON left.column = right.column (equal types, not double precision) among its AND-ed conditions")
	}
	j.HasLo, j.LoMs, j.HasHi, j.HiMs = b.hasLo, b.lo, b.hasHi, b.hi
	j.LeftUntil, j.RightUntil = b.leftUntil, b.rightUntil
	if j.HasLo && j.HasHi && j.LoMs > j.HiMs {
		return nil, c.src.errAt(ErrDefinition, location(je.Quals), "the join's time bounds admit no pair (%d ms > %d ms)", j.LoMs, j.HiMs)
	}
	if (ls.from != nil || rs.from != nil) && !j.HasLo && !j.HasHi && j.LeftUntil == nil && j.RightUntil == nil {
		return nil, c.src.errAt(ErrUnsupported, location(je.Quals), "a join with a view's rows needs a time bound between the sides' event times (ON or WHERE: b.t BETWEEN a.t AND a.t + INTERVAL '...'), or it keeps every row for ever")
	}
	if outer {
		j.LeftOuter, j.RightOuter = leftOuter, rightOuter
		switch {
		case j.LeftUntil != nil || j.RightUntil != nil:
			return nil, c.src.errAt(ErrUnsupported, location(je.Quals), "an outer join of two streams is bounded by constant intervals between the sides' event times, not by a column")
		case leftOuter && !j.HasHi:
			return nil, c.src.errAt(ErrUnsupported, location(je.Quals), "a LEFT or FULL join of two streams needs an upper bound on the right side's time (ON r.ts <= l.ts + INTERVAL '...'), or it never knows that a left row has no match")
		case rightOuter && !j.HasLo:
			return nil, c.src.errAt(ErrUnsupported, location(je.Quals), "a RIGHT or FULL join of two streams needs a lower bound on the right side's time (ON r.ts >= l.ts - INTERVAL '...'), or it never knows that a right row has no match")
		}
		j.On = on
	}
	j.RightFrom = rs.from
	v.Pair, v.Input, v.From = j, *ls.schema, ls.from
	// The version 3 lateness rule for joins that need version 3 anyway (aggregates are
	// set later: see checkOverJoinOrView); plain joins keep their version 2 plans.
	j.LateByFreed = j.RightFrom != nil || v.From != nil || j.LeftUntil != nil || j.RightUntil != nil
	if !outer {
		in.on = on
	}
	return in, nil
}

// conjuncts returns the AND-ed terms of e.
func conjuncts(e *plan.Expr) []*plan.Expr {
	if e.Op == plan.OpAnd {
		return append(conjuncts(e.Args[0]), conjuncts(e.Args[1])...)
	}
	return []*plan.Expr{e}
}

// bounds collects the time bounds of a join, on d = right time − left time, in ms.
type bounds struct {
	hasLo, hasHi bool
	lo, hi       int64
	// leftUntil and rightUntil bound a side's rows by one of its columns: the other
	// side's time is at most that column plus an offset.
	leftUntil, rightUntil *plan.Until
}

func (b *bounds) atLeast(k int64) {
	if !b.hasLo || k > b.lo {
		b.hasLo, b.lo = true, k
	}
}

func (b *bounds) atMost(k int64) {
	if !b.hasHi || k < b.hi {
		b.hasHi, b.hi = true, k
	}
}

// conjunct reads one ON term: a comparison of the two sides' event times (each plus or
// minus constant intervals), or an equality of the window bounds of two TUMBLEs of one
// size. Anything else bounds nothing (it still filters the pairs).
func (b *bounds) conjunct(e *plan.Expr, ls, rs *pairSide, nl int) {
	if len(e.Args) != 2 {
		return
	}
	op := e.Op
	if op == plan.OpEq && ls.window != nil && rs.window != nil && ls.window.SizeMs == rs.window.SizeMs {
		x, y := e.Args[0], e.Args[1]
		if x.Op == plan.OpCol && x.Col >= nl {
			x, y = y, x
		}
		nls := len(ls.schema.Columns)
		if x.Op == plan.OpCol && y.Op == plan.OpCol && x.Col >= nls && x.Col < nl && y.Col-nl-len(rs.schema.Columns) == x.Col-nls {
			// The same TUMBLE window: the times differ by less than its size.
			b.atLeast(-(ls.window.SizeMs - 1))
			b.atMost(ls.window.SizeMs - 1)
			return
		}
	}
	if op != plan.OpEq && op != plan.OpLt && op != plan.OpLe && op != plan.OpGt && op != plan.OpGe {
		return
	}
	sa, oa, ok1 := timeTerm(e.Args[0], ls, rs, nl)
	sb, ob, ok2 := timeTerm(e.Args[1], ls, rs, nl)
	if ok1 != ok2 {
		b.until(e, op, ls, rs, nl)
		return
	}
	if !ok1 || !ok2 || sa == sb {
		return
	}
	if sa == 'L' { // make it right + oa (op) left + ob
		oa, ob = ob, oa
		switch op {
		case plan.OpLt:
			op = plan.OpGt
		case plan.OpLe:
			op = plan.OpGe
		case plan.OpGt:
			op = plan.OpLt
		case plan.OpGe:
			op = plan.OpLe
		}
	}
	k := ob - oa // right − left (op) k
	switch op {
	case plan.OpEq:
		b.atLeast(k)
		b.atMost(k)
	case plan.OpGe:
		b.atLeast(k)
	case plan.OpGt:
		b.atLeast(k + 1)
	case plan.OpLe:
		b.atMost(k)
	case plan.OpLt:
		b.atMost(k - 1)
	}
}

// timeTerm reads side.event_time ± constant intervals: its side ('L' or 'R') and offset.
func timeTerm(e *plan.Expr, ls, rs *pairSide, nl int) (byte, int64, bool) {
	switch e.Op {
	case plan.OpCol:
		switch {
		case e.Col == ls.schema.EventTime && ls.schema.EventTime >= 0:
			return 'L', 0, true
		case rs.schema.EventTime >= 0 && e.Col == nl+rs.schema.EventTime:
			return 'R', 0, true
		}
	case plan.OpAdd, plan.OpSub:
		s, o, ok := timeTerm(e.Args[0], ls, rs, nl)
		c := e.Args[1]
		if !ok || c.Op != plan.OpConst || c.Type != plan.TypeInterval {
			return 0, 0, false
		}
		x, err := plan.DecodeValue(c.Val, plan.TypeInterval)
		ms, isInt := x.(int64)
		if err != nil || !isInt || ms > 1<<40 || ms < -(1<<40) {
			return 0, 0, false
		}
		if e.Op == plan.OpSub {
			ms = -ms
		}
		return s, o + ms, true
	}
	return 0, 0, false
}

// streamSide reports whether a join side names a stream or is a window function (which
// only a stream–stream join takes).
func (c *compiler) streamSide(n *pg.Node) bool {
	if n.GetRangeFunction() != nil {
		return true
	}
	rv := n.GetRangeVar()
	if rv == nil {
		return false
	}
	s, ok := c.names[rv.Relname]
	return ok && (s.Kind == plan.KindStream || s.Kind == plan.KindView)
}

// until reads a term that bounds one side's event time by a timestamp column of the
// other side (plus or minus constant intervals): t (op) col, or col (op) t. With t at
// most col + k, the column's side is useless once the watermark passes col + k.
func (b *bounds) until(e *plan.Expr, op plan.Op, ls, rs *pairSide, nl int) {
	x, y := e.Args[0], e.Args[1]
	st, ot, ok := timeTerm(x, ls, rs, nl)
	if !ok { // col (op) t: flip it to t (op') col
		x, y = y, x
		if st, ot, ok = timeTerm(x, ls, rs, nl); !ok {
			return
		}
		switch op {
		case plan.OpLt:
			op = plan.OpGt
		case plan.OpLe:
			op = plan.OpGe
		case plan.OpGt:
			op = plan.OpLt
		case plan.OpGe:
			op = plan.OpLe
		}
	}
	side, col, oc, ok := columnTerm(y, ls, rs, nl)
	if !ok || side == st {
		return
	}
	k := oc - ot // t (op) col + k
	switch op {
	case plan.OpLt:
		k--
	case plan.OpLe, plan.OpEq:
	default:
		return
	}
	u := &plan.Until{Col: col, OffMs: k}
	if side == 'L' && b.leftUntil == nil {
		b.leftUntil = u
	} else if side == 'R' && b.rightUntil == nil {
		b.rightUntil = u
	}
}

// columnTerm reads side.column ± constant intervals, the column a timestamp of the
// side's own (not a window bound): its side, index in the side's row and offset.
func columnTerm(e *plan.Expr, ls, rs *pairSide, nl int) (byte, int, int64, bool) {
	switch e.Op {
	case plan.OpCol:
		if e.Type != plan.TypeTimestamp {
			return 0, 0, 0, false
		}
		switch {
		case e.Col < len(ls.schema.Columns):
			return 'L', e.Col, 0, true
		case e.Col >= nl && e.Col < nl+len(rs.schema.Columns):
			return 'R', e.Col - nl, 0, true
		}
	case plan.OpAdd, plan.OpSub:
		s, col, o, ok := columnTerm(e.Args[0], ls, rs, nl)
		ms, isConst := intervalConst(e.Args[1])
		if !ok || !isConst {
			return 0, 0, 0, false
		}
		if e.Op == plan.OpSub {
			ms = -ms
		}
		return s, col, o + ms, true
	}
	return 0, 0, 0, false
}

// intervalConst reads a constant interval of at most 2^40 ms.
func intervalConst(c *plan.Expr) (int64, bool) {
	if c.Op != plan.OpConst || c.Type != plan.TypeInterval {
		return 0, false
	}
	x, err := plan.DecodeValue(c.Val, plan.TypeInterval)
	ms, isInt := x.(int64)
	if err != nil || !isInt || ms > 1<<40 || ms < -(1<<40) {
		return 0, false
	}
	return ms, true
}
