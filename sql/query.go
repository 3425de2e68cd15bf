package sql

import (
	"github.com/lockstepdb/lockstep/sql/plan"
	pg "github.com/pganalyze/pg_query_go/v6"
)

// CompileQuery plans one SELECT over a table or view of catalog: SELECT exprs FROM name
// [WHERE ...] [ORDER BY ...] [LIMIT n], answered from the state machine by
// plan.Query.Run. Errors are *Error at their place, as Compile's.
func CompileQuery(src string, catalog []plan.Schema) (*plan.Query, error) {
	s := &source{text: src}
	stmts, err := parse(s)
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 || stmts[0].node.GetSelectStmt() == nil || stmts[0].emit != "" {
		return nil, s.errAt(ErrUnsupported, -1, "a query is one SELECT statement")
	}
	sel := stmts[0].node.GetSelectStmt()
	at := stmts[0].start
	switch {
	case len(sel.FromClause) != 1 || sel.FromClause[0].GetRangeVar() == nil:
		return nil, s.errAt(ErrUnsupported, at, "a query reads one table or view: SELECT ... FROM name")
	case len(sel.GroupClause) > 0 || sel.HavingClause != nil || len(sel.DistinctClause) > 0 || sel.WithClause != nil ||
		len(sel.WindowClause) > 0 || sel.Op != pg.SetOperation_SETOP_NONE || sel.LimitOffset != nil:
		return nil, s.errAt(ErrUnsupported, at, "GROUP BY, HAVING, DISTINCT, WITH, OVER, set operations and OFFSET are not supported in queries")
	}
	rv := sel.FromClause[0].GetRangeVar()
	var src0 *plan.Schema
	for i := range catalog {
		if catalog[i].Name == rv.Relname {
			src0 = &catalog[i]
		}
	}
	if src0 == nil {
		return nil, s.errAt(ErrUnknown, rv.Location, "table or view %s", rv.Relname)
	}
	if src0.Kind == plan.KindStream {
		return nil, s.errAt(ErrUnsupported, rv.Location, "%s is a stream, which keeps no rows to query: query a view over it", rv.Relname)
	}
	in := &inputScope{src: s, schema: src0, names: []string{rv.Relname}}
	if rv.Alias != nil {
		in.names = append(in.names, rv.Alias.Aliasname)
	}
	c := &compiler{src: s}
	ic := &converter{src: s, scope: in}
	q := &plan.Query{Source: *src0, Limit: -1}
	if sel.WhereClause != nil {
		if q.Where, err = ic.expr(sel.WhereClause); err != nil {
			return nil, err
		}
		if q.Where.Type != plan.TypeBoolean && q.Where.Type != plan.TypeNull {
			return nil, s.errAt(ErrType, location(sel.WhereClause), "WHERE must be boolean, not %s", q.Where.Type)
		}
	}
	var v plan.View // collects the columns, as a view's select list does
	if err := c.project(&v, ic, sel); err != nil {
		return nil, err
	}
	q.Output, q.Columns = v.Output, v.Schema.Columns
	for _, n := range sel.SortClause {
		sb := n.GetSortBy()
		var e *plan.Expr
		if k := sb.Node.GetAConst(); k != nil {
			iv, ok := k.Val.(*pg.A_Const_Ival)
			if !ok || iv.Ival.Ival < 1 || int(iv.Ival.Ival) > len(q.Output) {
				return nil, s.errAt(ErrDefinition, k.Location, "ORDER BY position is not in the select list")
			}
			e = q.Output[iv.Ival.Ival-1]
		} else if cr := sb.Node.GetColumnRef(); cr != nil && len(cr.Fields) == 1 && src0.Column(cr.Fields[0].GetString_().GetSval()) < 0 {
			name := cr.Fields[0].GetString_().GetSval()
			for i, col := range q.Columns { // ORDER BY an output column's name
				if col.Name == name {
					e = q.Output[i]
				}
			}
		}
		if e == nil {
			if e, err = ic.expr(sb.Node); err != nil {
				return nil, err
			}
		}
		if sb.SortbyNulls != pg.SortByNulls_SORTBY_NULLS_DEFAULT || sb.UseOp != nil {
			return nil, s.errAt(ErrUnsupported, sb.Location, "NULLS FIRST/LAST and USING are not supported")
		}
		q.Order = append(q.Order, plan.OrderKey{Expr: e, Desc: sb.SortbyDir == pg.SortByDir_SORTBY_DESC})
	}
	if sel.LimitCount != nil {
		e, err := (&converter{src: s, scope: noColumns{s}}).expr(sel.LimitCount)
		if err != nil {
			return nil, err
		}
		n, _ := e.Eval(nil)
		if i, ok := n.(int64); !ok || i < 0 {
			return nil, s.errAt(ErrType, location(sel.LimitCount), "LIMIT must be a non-negative bigint constant")
		} else {
			q.Limit = i
		}
	}
	if err := q.Validate(); err != nil {
		return nil, s.errAt(ErrDefinition, -1, "internal: the query does not validate: %v", err)
	}
	return q, nil
}
