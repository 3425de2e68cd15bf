package sql

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockstepdb/lockstep/sql/plan"
	pg "github.com/pganalyze/pg_query_go/v6"
)

// CREATE MATERIALIZED VIEW name [WITH (allowed_lateness = '...')] AS SELECT ... FROM
// stream | TUMBLE(stream, ts, size) | HOP(stream, ts, slide, size) [WHERE ...]
// [GROUP BY ...] [HAVING ...] [EMIT CHANGES | EMIT ON WINDOW CLOSE].

const (
	windowStart = "window_start"
	windowEnd   = "window_end"
)

func (c *compiler) createView(st statement, ct *pg.CreateTableAsStmt) error {
	into := ct.Into
	name := into.Rel.Relname
	if err := checkName(c.src, name, into.Rel.Location); err != nil {
		return err
	}
	if len(into.ColNames) > 0 {
		return c.src.errAt(ErrUnsupported, into.Rel.Location, "a column list after the view's name: name the columns with AS in the SELECT")
	}
	if err := c.checkFree(name, plan.KindView, into.Rel.Location); err != nil {
		return err
	}
	v := plan.View{Name: name, SQL: strings.TrimSpace(c.statementText(st)), Emit: plan.EmitChanges}
	var latenessAt int32 = -1
	for _, o := range into.Options {
		d := o.GetDefElem()
		val, err := optionText(c.src, d)
		if err != nil {
			return err
		}
		if d.Defname != "allowed_lateness" {
			return c.src.errAt(ErrUnknown, d.Location, "view option %s (options: allowed_lateness)", d.Defname)
		}
		ms, err := plan.ParseInterval(val)
		if err != nil || ms < 0 {
			return c.src.errAt(ErrDefinition, d.Location, "allowed_lateness: %s", errText(err, "negative"))
		}
		v.AllowedLatenessMs, latenessAt = ms, d.Location
	}
	sel := ct.Query.GetSelectStmt()
	if sel == nil {
		return c.src.errAt(ErrUnsupported, st.start, "a view is a SELECT")
	}
	if len(sel.FromClause) == 2 && sel.WhereClause != nil && sel.FromClause[0].GetJoinExpr() == nil && sel.FromClause[1].GetJoinExpr() == nil {
		// FROM a, b WHERE cond is the inner join a JOIN b ON cond.
		sel.FromClause = []*pg.Node{{Node: &pg.Node_JoinExpr{JoinExpr: &pg.JoinExpr{Jointype: pg.JoinType_JOIN_INNER,
			Larg: sel.FromClause[0], Rarg: sel.FromClause[1], Quals: sel.WhereClause}}}}
		sel.WhereClause = nil
	}
	if err := c.checkSelect(sel, st.start); err != nil {
		return err
	}
	in, err := c.from(sel, &v)
	if err != nil {
		return err
	}
	if v.Pair == nil {
		v.Input = *in.schema
	}
	ic := &converter{src: c.src, scope: in}
	if sel.WhereClause != nil {
		if v.Where, err = ic.expr(sel.WhereClause); err != nil {
			return err
		}
		if v.Where.Type != plan.TypeBoolean && v.Where.Type != plan.TypeNull {
			return c.src.errAt(ErrType, location(sel.WhereClause), "WHERE must be boolean, not %s", v.Where.Type)
		}
	}
	if in.on != nil { // an inner join's ON filters its pairs as WHERE does
		if v.Where == nil {
			v.Where = in.on
		} else {
			v.Where = &plan.Expr{Op: plan.OpAnd, Type: plan.TypeBoolean, Args: []*plan.Expr{in.on, v.Where}}
		}
	}
	aggregated := len(sel.GroupClause) > 0 || v.Window != nil || sel.HavingClause != nil || c.hasAggregate(in, sel.TargetList)
	if v.From != nil && v.From.Updating && !aggregated {
		return c.src.errAt(ErrUnsupported, location(sel.FromClause[0]), "the rows of view %s change (it is not a TUMBLE or HOP view with EMIT ON WINDOW CLOSE): only an aggregate (count, and sum or avg of integers) reads it", v.Input.Name)
	}
	if aggregated && v.Pair != nil && (v.Pair.LeftOuter || v.Pair.RightOuter) {
		at := location(sel.FromClause[0])
		if je := sel.FromClause[0].GetJoinExpr(); je != nil {
			at = location(je.Rarg)
		}
		return c.src.errAt(ErrUnsupported, at, "an outer join of two streams does not aggregate or group (a later step)")
	}
	if aggregated && v.Join != nil {
		return c.src.errAt(ErrUnsupported, location(sel.FromClause[0]), "aggregates over a join are a later step")
	}
	if aggregated && in.schema.Kind == plan.KindTable {
		return c.src.errAt(ErrUnsupported, location(sel.FromClause[0]), "aggregates over table %s need retractions: a later step", in.schema.Name)
	}
	if !aggregated {
		if err := c.project(&v, ic, sel); err != nil {
			return err
		}
	} else if err := c.aggregate(&v, in, sel); err != nil {
		return err
	}
	if err := c.checkOverJoinOrView(&v, sel, st); err != nil {
		return err
	}
	switch st.emit {
	case "close":
		if v.Window == nil {
			return c.src.errAt(ErrDefinition, st.emitAt, "EMIT ON WINDOW CLOSE needs a window: FROM TUMBLE(...) or HOP(...)")
		}
		v.Emit = plan.EmitOnClose
	case "changes":
		v.Emit = plan.EmitChanges
	}
	if latenessAt >= 0 && v.Window == nil {
		return c.src.errAt(ErrDefinition, latenessAt, "allowed_lateness needs a window: FROM TUMBLE(...) or HOP(...)")
	}
	v.Schema.Name, v.Schema.Kind, v.Schema.Key, v.Schema.EventTime = name, plan.KindView, -1, -1
	c.p.Views = append(c.p.Views, v)
	c.names[name] = &c.p.Views[len(c.p.Views)-1].Schema
	c.reserve(name, plan.KindView)
	return nil
}

// statementText returns the text of a statement (to its semicolon or the end).
func (c *compiler) statementText(st statement) string {
	rest := c.src.text[st.start:]
	if i := strings.IndexByte(rest, ';'); i >= 0 {
		// A semicolon inside a string literal ends the text early; this is for display.
		rest = rest[:i]
	}
	return rest
}

func (c *compiler) checkSelect(sel *pg.SelectStmt, at int32) error {
	switch {
	case sel.Op != pg.SetOperation_SETOP_NONE:
		return c.src.errAt(ErrUnsupported, at, "UNION, INTERSECT and EXCEPT are not supported")
	case sel.WithClause != nil:
		return c.src.errAt(ErrUnsupported, at, "WITH is not supported")
	case len(sel.DistinctClause) > 0:
		return c.src.errAt(ErrUnsupported, at, "SELECT DISTINCT is not supported: GROUP BY the columns")
	case len(sel.SortClause) > 0 || sel.LimitCount != nil || sel.LimitOffset != nil:
		return c.src.errAt(ErrUnsupported, at, "ORDER BY, LIMIT and OFFSET do not apply to a maintained view (a later step: SELECT over views)")
	case len(sel.WindowClause) > 0:
		return c.src.errAt(ErrUnsupported, at, "WINDOW clauses (OVER) are not supported: window with TUMBLE or HOP in FROM")
	case len(sel.ValuesLists) > 0:
		return c.src.errAt(ErrUnsupported, at, "a view over VALUES is not supported")
	case len(sel.FromClause) == 0:
		return c.src.errAt(ErrDefinition, at, "a view needs FROM a stream")
	case len(sel.FromClause) > 1:
		return c.src.errAt(ErrUnsupported, location(sel.FromClause[1]), "joins are not supported yet")
	}
	return nil
}

// from resolves the FROM item: a stream, or a window table function over one.
func (c *compiler) from(sel *pg.SelectStmt, v *plan.View) (*inputScope, error) {
	item := sel.FromClause[0]
	var (
		rv    string
		at    int32
		alias *pg.Alias
		fc    *pg.FuncCall
	)
	switch x := item.GetNode().(type) {
	case *pg.Node_RangeVar:
		rv, at, alias = x.RangeVar.Relname, x.RangeVar.Location, x.RangeVar.Alias
		if x.RangeVar.Schemaname != "" {
			return nil, c.src.errAt(ErrUnsupported, at, "schema-qualified names are not supported")
		}
	case *pg.Node_RangeFunction:
		alias = x.RangeFunction.Alias
		items := x.RangeFunction.Functions[0].GetList().GetItems()
		fc = items[0].GetFuncCall()
		if fc == nil || len(x.RangeFunction.Functions) != 1 {
			return nil, c.src.errAt(ErrUnsupported, -1, "FROM a function other than TUMBLE or HOP")
		}
		at = fc.Location
		name := funcName(fc)
		if name != "tumble" && name != "hop" && name != "session" {
			return nil, c.src.errAt(ErrUnsupported, fc.Location, "FROM %s(...): the table functions are TUMBLE, HOP and SESSION", name)
		}
		if len(fc.Args) == 0 || fc.Args[0].GetColumnRef() == nil {
			return nil, c.src.errAt(ErrDefinition, fc.Location, "%s(stream, event_time_column, ...): the first argument names a stream", strings.ToUpper(name))
		}
		rv = fc.Args[0].GetColumnRef().Fields[0].GetString_().GetSval()
		at = location(fc.Args[0])
	case *pg.Node_JoinExpr:
		return c.join(x.JoinExpr, v, sel.WhereClause)
	case *pg.Node_RangeSubselect:
		return nil, c.src.errAt(ErrUnsupported, -1, "subqueries in FROM are not supported")
	default:
		return nil, c.src.errAt(ErrUnsupported, location(item), "FROM %s is not supported", nodeName(item))
	}
	s, ok := c.names[rv]
	if !ok {
		return nil, c.src.errAt(ErrUnknown, at, "stream %s", rv)
	}
	if s.Kind == plan.KindView && fc != nil {
		return nil, c.src.errAt(ErrUnsupported, at, "%s(%s, ...): windows are over streams; over a view's final rows, GROUP BY its event-time column", strings.ToUpper(funcName(fc)), rv)
	}
	if s.Kind == plan.KindTable && fc != nil {
		return nil, c.src.errAt(ErrUnsupported, at, "%s is a %s: views read streams, and tables without windows or aggregates (the rest is a later step)", rv, s.Kind)
	}
	if s.Kind == plan.KindView {
		s, v.From = c.viewInput(s)
	}
	in := &inputScope{src: c.src, schema: s, names: []string{rv}}
	if alias != nil {
		in.names = append(in.names, alias.Aliasname)
	}
	if fc != nil {
		w, err := c.windowFunc(fc, s)
		if err != nil {
			return nil, err
		}
		v.Window = w
	}
	return in, nil
}

// windowFunc reads TUMBLE(s, ts, size) or HOP(s, ts, slide, size).
func (c *compiler) windowFunc(fc *pg.FuncCall, s *plan.Schema) (*plan.Window, error) {
	name := strings.ToUpper(funcName(fc))
	want := 3
	w := &plan.Window{Kind: plan.WindowTumble}
	switch name {
	case "HOP":
		want, w.Kind = 4, plan.WindowHop
	case "SESSION":
		w.Kind = plan.WindowSession
	}
	if len(fc.Args) != want {
		return nil, c.src.errAt(ErrDefinition, fc.Location, "%s takes %d arguments: %s", name, want, map[string]string{
			"TUMBLE":  "TUMBLE(stream, event_time_column, INTERVAL 'size')",
			"SESSION": "SESSION(stream, event_time_column, INTERVAL 'gap')",
			"HOP":     "HOP(stream, event_time_column, INTERVAL 'slide', INTERVAL 'size')"}[name])
	}
	ts := fc.Args[1].GetColumnRef()
	if ts == nil {
		return nil, c.src.errAt(ErrDefinition, location(fc.Args[1]), "%s's second argument names the event-time column", name)
	}
	col := ts.Fields[len(ts.Fields)-1].GetString_().GetSval()
	i := s.Column(col)
	switch {
	case i < 0:
		return nil, c.src.errAt(ErrUnknown, ts.Location, "column %s of %s", col, s.Name)
	case s.EventTime < 0:
		return nil, c.src.errAt(ErrDefinition, ts.Location, "%s has no event-time column: CREATE STREAM ... WITH (event_time = '%s')", s.Name, col)
	case i != s.EventTime:
		return nil, c.src.errAt(ErrDefinition, ts.Location, "windows are over %s's event-time column %s, not %s", s.Name, s.Columns[s.EventTime].Name, col)
	}
	spans := make([]int64, 0, 2)
	for _, a := range fc.Args[2:] {
		cv := &converter{src: c.src, scope: noColumns{c.src}}
		e, err := cv.expr(a)
		if err == nil {
			e, err = cv.castTo(e, plan.TypeInterval, location(a))
		}
		if err != nil {
			return nil, err
		}
		ms, _ := e.Eval(nil)
		if ms == nil || ms.(int64) <= 0 {
			return nil, c.src.errAt(ErrDefinition, location(a), "%s: a window span must be a positive interval", name)
		}
		spans = append(spans, ms.(int64))
	}
	if w.Kind != plan.WindowHop {
		w.SizeMs = spans[0]
		return w, nil
	}
	w.SlideMs, w.SizeMs = spans[0], spans[1]
	if w.SlideMs > w.SizeMs || w.SizeMs%w.SlideMs != 0 {
		return nil, c.src.errAt(ErrDefinition, fc.Location, "HOP: the size (%d ms) must be a multiple of the slide (%d ms)", w.SizeMs, w.SlideMs)
	}
	return w, nil
}

// inputScope resolves columns of the view's input row.
type inputScope struct {
	src    *source
	schema *plan.Schema
	names  []string // the stream's name and its alias
	aggs   func(*converter, *pg.FuncCall) (*plan.Expr, error)
	// join, for a join view, is the joined table, named joinNames; its columns follow
	// the stream's in the input row.
	join      *plan.Schema
	joinNames []string
	// on, for a stream–stream join, is its ON condition over the pair row: the view's
	// WHERE is ON AND WHERE.
	on *plan.Expr
}

func (s *inputScope) column(q, name string, at int32) (*plan.Expr, error) {
	inStream, inTable := q == "", q == ""
	if q != "" {
		inStream, inTable = slices.Contains(s.names, q), s.join != nil && slices.Contains(s.joinNames, q)
		if !inStream && !inTable {
			return nil, s.src.errAt(ErrUnknown, at, "%s.%s: FROM has no %s", q, name, q)
		}
	}
	i, j := -1, -1
	if inStream {
		i = s.schema.Column(name)
	}
	if inTable && s.join != nil {
		j = s.join.Column(name)
	}
	switch {
	case i >= 0 && j >= 0:
		return nil, s.src.errAt(ErrDefinition, at, "column %s is ambiguous: %s.%s or %s.%s", name, s.names[len(s.names)-1], name, s.joinNames[len(s.joinNames)-1], name)
	case i >= 0:
		return plan.ColumnRef(i, s.schema.Columns[i].Type), nil
	case j >= 0:
		return plan.ColumnRef(len(s.schema.Columns)+j, s.join.Columns[j].Type), nil
	}
	if q != "" && inTable {
		return nil, s.src.errAt(ErrUnknown, at, "column %s of %s", name, s.join.Name)
	}
	return nil, s.src.errAt(ErrUnknown, at, "column %s of %s", name, s.schema.Name)
}

// columns returns every column of the input row, for SELECT *.
func (s *inputScope) columns() []plan.Column {
	out := slices.Clone(s.schema.Columns)
	if s.join != nil {
		out = append(out, s.join.Columns...)
	}
	return out
}

func (s *inputScope) aggregate(c *converter, fc *pg.FuncCall) (*plan.Expr, error) {
	if s.aggs != nil {
		return s.aggs(c, fc)
	}
	return nil, nil
}

func (*inputScope) match(*converter, *pg.Node) *plan.Expr { return nil }

// hasAggregate reports whether a select list calls an aggregate.
func (c *compiler) hasAggregate(in *inputScope, targets []*pg.Node) bool {
	saw := false
	probe := &inputScope{src: in.src, schema: in.schema, names: in.names, aggs: func(*converter, *pg.FuncCall) (*plan.Expr, error) {
		saw = true
		return plan.Const(nil, plan.TypeNull), nil
	}}
	pc := &converter{src: c.src, scope: probe}
	for _, t := range targets {
		if rt := t.GetResTarget(); rt != nil {
			_, _ = pc.expr(rt.Val)
		}
	}
	return saw
}

// project plans an unaggregated view.
func (c *compiler) project(v *plan.View, ic *converter, sel *pg.SelectStmt) error {
	for k, t := range sel.TargetList {
		rt := t.GetResTarget()
		if cr := rt.Val.GetColumnRef(); cr != nil {
			if _, star := cr.Fields[len(cr.Fields)-1].GetNode().(*pg.Node_AStar); star {
				for i, col := range ic.scope.(*inputScope).columns() {
					if err := c.addColumn(v, col.Name, plan.ColumnRef(i, col.Type), rt.Location); err != nil {
						return err
					}
				}
				continue
			}
		}
		e, err := ic.expr(rt.Val)
		if err != nil {
			return err
		}
		if err := c.addColumn(v, outputName(rt, k), e, rt.Location); err != nil {
			return err
		}
	}
	return nil
}

// outputName is a select item's column name: its alias, a column's name, a function's
// name, else columnN.
func outputName(rt *pg.ResTarget, k int) string {
	if rt.Name != "" {
		return rt.Name
	}
	if cr := rt.Val.GetColumnRef(); cr != nil {
		return cr.Fields[len(cr.Fields)-1].GetString_().GetSval()
	}
	if fc := rt.Val.GetFuncCall(); fc != nil {
		return funcName(fc)
	}
	return fmt.Sprintf("column%d", k+1)
}

func (c *compiler) addColumn(v *plan.View, name string, e *plan.Expr, at int32) error {
	if v.Schema.Column(name) >= 0 {
		return c.src.errAt(ErrDefinition, at, "column %s twice in the view: name one with AS", name)
	}
	t := e.Type
	if t == plan.TypeNull {
		return c.src.errAt(ErrType, at, "column %s has no type (a bare NULL): cast it, CAST(NULL AS bigint)", name)
	}
	v.Schema.Columns = append(v.Schema.Columns, plan.Column{Name: name, Type: t})
	v.Output = append(v.Output, e)
	return nil
}

// join resolves FROM stream [AS a] [LEFT] JOIN table [AS b] ON a.col = b.key: a lookup
// of the table's row whose key is the stream row's column.
func (c *compiler) join(je *pg.JoinExpr, v *plan.View, where *pg.Node) (*inputScope, error) {
	pair := c.streamSide(je.Larg) && c.streamSide(je.Rarg)
	if !pair && je.Jointype != pg.JoinType_JOIN_INNER && je.Jointype != pg.JoinType_JOIN_LEFT {
		return nil, c.src.errAt(ErrUnsupported, location(je.Rarg), "only JOIN and LEFT JOIN of a stream with a table are supported")
	}
	if je.IsNatural || len(je.UsingClause) > 0 || je.Quals == nil {
		return nil, c.src.errAt(ErrUnsupported, location(je.Rarg), "write the join condition as ON stream.column = table.key")
	}
	if pair {
		l, err := c.pairSide(je.Larg)
		if err != nil {
			return nil, err
		}
		r, err := c.pairSide(je.Rarg)
		if err != nil {
			return nil, err
		}
		return c.pairJoin(je, l, r, v, where)
	}
	side := func(n *pg.Node) (*plan.Schema, []string, error) {
		rv := n.GetRangeVar()
		if rv == nil {
			return nil, nil, c.src.errAt(ErrUnsupported, location(n), "a join of a stream and a table, by name")
		}
		s, ok := c.names[rv.Relname]
		if !ok {
			return nil, nil, c.src.errAt(ErrUnknown, rv.Location, "stream or table %s", rv.Relname)
		}
		names := []string{rv.Relname}
		if rv.Alias != nil {
			names = append(names, rv.Alias.Aliasname)
		}
		return s, names, nil
	}
	ls, lnames, err := side(je.Larg)
	if err != nil {
		return nil, err
	}
	rs, rnames, err := side(je.Rarg)
	if err != nil {
		return nil, err
	}
	if ls.Kind != plan.KindStream || rs.Kind != plan.KindTable {
		return nil, c.src.errAt(ErrUnsupported, location(je.Rarg), "a join is a stream JOIN a table (%s is a %s, %s a %s): stream–stream joins are a later step", ls.Name, ls.Kind, rs.Name, rs.Kind)
	}
	in := &inputScope{src: c.src, schema: ls, names: lnames, join: rs, joinNames: rnames}
	on := je.Quals.GetAExpr()
	bad := c.src.errAt(ErrUnsupported, location(je.Quals), "the join condition must be stream.column = %s.%s (the table's key)", rs.Name, rs.Columns[rs.Key].Name)
	if on == nil || on.Kind != pg.A_Expr_Kind_AEXPR_OP || len(on.Name) != 1 || on.Name[0].GetString_().GetSval() != "=" {
		return nil, bad
	}
	l, err := (&converter{src: c.src, scope: in}).expr(on.Lexpr)
	if err != nil {
		return nil, err
	}
	r, err := (&converter{src: c.src, scope: in}).expr(on.Rexpr)
	if err != nil {
		return nil, err
	}
	n := len(ls.Columns)
	if l.Op == plan.OpCol && l.Col >= n {
		l, r = r, l
	}
	if l.Op != plan.OpCol || r.Op != plan.OpCol || l.Col >= n || r.Col != n+rs.Key {
		return nil, bad
	}
	if l.Type != r.Type {
		return nil, c.src.errAt(ErrType, location(je.Quals), "join of %s (%s) with %s (%s)", ls.Columns[l.Col].Name, l.Type, rs.Columns[rs.Key].Name, r.Type)
	}
	v.Join = &plan.Join{Table: *rs, Column: l.Col, Left: je.Jointype == pg.JoinType_JOIN_LEFT}
	return in, nil
}
