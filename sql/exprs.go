package sql

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockstepdb/lockstep/sql/plan"
	pg "github.com/pganalyze/pg_query_go/v6"
)

// Expressions: PostgreSQL parse nodes turned into typed plan expressions, in a scope that
// resolves column references (an input row, or a group row of an aggregated view).

// scope resolves what an expression may name.
type scope interface {
	// column resolves a column reference (qualifier may be empty).
	column(qualifier, name string, at int32) (*plan.Expr, error)
	// aggregate resolves an aggregate call; nil when aggregates are not allowed here.
	aggregate(c *converter, fc *pg.FuncCall) (*plan.Expr, error)
	// match returns the slot of an expression the scope computes itself (a GROUP BY
	// expression), or nil.
	match(c *converter, n *pg.Node) *plan.Expr
}

type converter struct {
	src   *source
	scope scope
}

// nondeterministic lists the functions refused because they read a clock or randomness:
// replicas must compute the same values.
var nondeterministic = map[string]bool{"now": true, "random": true, "clock_timestamp": true,
	"statement_timestamp": true, "transaction_timestamp": true, "timeofday": true, "gen_random_uuid": true, "setseed": true}

func (c *converter) expr(n *pg.Node) (*plan.Expr, error) {
	if m := c.scope.match(c, n); m != nil {
		return m, nil
	}
	switch x := n.GetNode().(type) {
	case *pg.Node_ColumnRef:
		return c.columnRef(x.ColumnRef)
	case *pg.Node_AConst:
		return c.constant(x.AConst)
	case *pg.Node_TypeCast:
		return c.cast(x.TypeCast)
	case *pg.Node_AExpr:
		return c.aExpr(x.AExpr)
	case *pg.Node_BoolExpr:
		return c.boolExpr(x.BoolExpr)
	case *pg.Node_NullTest:
		a, err := c.expr(x.NullTest.Arg)
		if err != nil {
			return nil, err
		}
		op := plan.OpIsNull
		if x.NullTest.Nulltesttype == pg.NullTestType_IS_NOT_NULL {
			op = plan.OpIsNotNull
		}
		return &plan.Expr{Op: op, Type: plan.TypeBoolean, Args: []*plan.Expr{a}}, nil
	case *pg.Node_CaseExpr:
		return c.caseExpr(x.CaseExpr)
	case *pg.Node_CoalesceExpr:
		args, err := c.list(x.CoalesceExpr.Args)
		if err != nil {
			return nil, err
		}
		t, err := c.unify(args, x.CoalesceExpr.Location, "COALESCE")
		if err != nil {
			return nil, err
		}
		return &plan.Expr{Op: plan.OpCoalesce, Type: t, Args: args}, nil
	case *pg.Node_FuncCall:
		return c.funcCall(x.FuncCall)
	case *pg.Node_SqlvalueFunction:
		return nil, c.src.errAt(ErrUnsupported, x.SqlvalueFunction.Location, "CURRENT_TIMESTAMP and the like read the clock: a view must compute the same values on every replica")
	case *pg.Node_SubLink:
		return nil, c.src.errAt(ErrUnsupported, x.SubLink.Location, "subqueries are not supported")
	case *pg.Node_ParamRef:
		return nil, c.src.errAt(ErrUnsupported, x.ParamRef.Location, "parameters are not supported")
	}
	return nil, c.src.errAt(ErrUnsupported, location(n), "expression %s is not supported", nodeName(n))
}

func (c *converter) list(ns []*pg.Node) ([]*plan.Expr, error) {
	out := make([]*plan.Expr, len(ns))
	for i, n := range ns {
		e, err := c.expr(n)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

func (c *converter) columnRef(r *pg.ColumnRef) (*plan.Expr, error) {
	var parts []string
	for _, f := range r.Fields {
		if _, star := f.GetNode().(*pg.Node_AStar); star {
			return nil, c.src.errAt(ErrUnsupported, r.Location, "* is only allowed as a whole select item")
		}
		parts = append(parts, f.GetString_().GetSval())
	}
	switch len(parts) {
	case 1:
		return c.scope.column("", parts[0], r.Location)
	case 2:
		return c.scope.column(parts[0], parts[1], r.Location)
	}
	return nil, c.src.errAt(ErrUnknown, r.Location, "column %s", strings.Join(parts, "."))
}

func (c *converter) constant(k *pg.A_Const) (*plan.Expr, error) {
	if k.Isnull {
		return plan.Const(nil, plan.TypeNull), nil
	}
	switch v := k.Val.(type) {
	case *pg.A_Const_Ival:
		return plan.Const(int64(v.Ival.Ival), plan.TypeBigint), nil
	case *pg.A_Const_Fval:
		s := v.Fval.Fval
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return plan.Const(i, plan.TypeBigint), nil
		}
		if !strings.ContainsAny(s, ".eE") {
			return nil, c.src.errAt(ErrType, k.Location, "integer %s out of bigint range", s)
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, c.src.errAt(ErrType, k.Location, "number %s: %v", s, err)
		}
		// PostgreSQL types 1.5 as numeric; Lockstep has no numeric, so it is a double.
		return plan.Const(f, plan.TypeDouble), nil
	case *pg.A_Const_Boolval:
		return plan.Const(v.Boolval.Boolval, plan.TypeBoolean), nil
	case *pg.A_Const_Sval:
		return plan.Const(v.Sval.Sval, plan.TypeText), nil
	}
	return nil, c.src.errAt(ErrUnsupported, k.Location, "bit-string constants are not supported")
}

// typeName resolves a type name; typmods (INTERVAL '1' MINUTE, varchar(10)) are refused.
func (c *converter) typeName(tn *pg.TypeName) (plan.Type, error) {
	var names []string
	for _, n := range tn.Names {
		names = append(names, n.GetString_().GetSval())
	}
	name := names[len(names)-1]
	if len(tn.ArrayBounds) > 0 {
		return 0, c.src.errAt(ErrUnsupported, tn.Location, "array types are not supported")
	}
	t, ok := plan.ParseType(name)
	if !ok {
		return 0, c.src.errAt(ErrUnknown, tn.Location, "type %s (types: bigint, double precision, text, bytea, boolean, timestamp, interval)", name)
	}
	if len(tn.Typmods) > 0 && t != plan.TypeText {
		return 0, c.src.errAt(ErrUnsupported, tn.Location, "type modifiers on %s: write INTERVAL '1 minute' or TIMESTAMP '...'", t)
	}
	return t, nil
}

func (c *converter) cast(tc *pg.TypeCast) (*plan.Expr, error) {
	t, err := c.typeName(tc.TypeName)
	if err != nil {
		return nil, err
	}
	a, err := c.expr(tc.Arg)
	if err != nil {
		return nil, err
	}
	return c.castTo(a, t, tc.Location)
}

// castTo casts a to t, folding constants now so a bad literal is a compile error.
func (c *converter) castTo(a *plan.Expr, t plan.Type, at int32) (*plan.Expr, error) {
	if a.Type == t {
		return a, nil
	}
	if !plan.CastType(a.Type, t) {
		return nil, c.src.errAt(ErrType, at, "cannot cast %s to %s", a.Type, t)
	}
	if a.Op == plan.OpConst {
		v, err := a.Eval(nil)
		if err == nil {
			v, err = plan.Cast(v, t)
		}
		if err != nil {
			return nil, c.src.errAt(ErrType, at, "%v", err)
		}
		return plan.Const(v, t), nil
	}
	return &plan.Expr{Op: plan.OpCast, Type: t, Args: []*plan.Expr{a}}, nil
}

// isLiteralText reports whether n is a bare string literal, which PostgreSQL types by
// its context ('5 seconds' next to an interval is an interval).
func isLiteralText(n *pg.Node) bool {
	k := n.GetAConst()
	if k == nil {
		return false
	}
	_, ok := k.Val.(*pg.A_Const_Sval)
	return ok
}

var binaryOps = map[string]plan.Op{"+": plan.OpAdd, "-": plan.OpSub, "*": plan.OpMul, "/": plan.OpDiv, "%": plan.OpMod,
	"=": plan.OpEq, "<>": plan.OpNe, "<": plan.OpLt, "<=": plan.OpLe, ">": plan.OpGt, ">=": plan.OpGe, "||": plan.OpConcat}

func (c *converter) binary(op plan.Op, ln, rn *pg.Node, at int32) (*plan.Expr, error) {
	l, err := c.expr(ln)
	if err != nil {
		return nil, err
	}
	r, err := c.expr(rn)
	if err != nil {
		return nil, err
	}
	// An untyped string literal takes the type of the other side, as in PostgreSQL.
	if isLiteralText(rn) && l.Type != plan.TypeText && l.Type != plan.TypeNull {
		if r, err = c.castTo(r, literalTarget(op, l.Type), location(rn)); err != nil {
			return nil, err
		}
	} else if isLiteralText(ln) && r.Type != plan.TypeText && r.Type != plan.TypeNull {
		if l, err = c.castTo(l, literalTarget(op, r.Type), location(ln)); err != nil {
			return nil, err
		}
	}
	if op == plan.OpConcat { // text || x casts x to text, as PostgreSQL does
		if l.Type == plan.TypeText && r.Type != plan.TypeText && plan.CastType(r.Type, plan.TypeText) {
			r = &plan.Expr{Op: plan.OpCast, Type: plan.TypeText, Args: []*plan.Expr{r}}
		} else if r.Type == plan.TypeText && l.Type != plan.TypeText && plan.CastType(l.Type, plan.TypeText) {
			l = &plan.Expr{Op: plan.OpCast, Type: plan.TypeText, Args: []*plan.Expr{l}}
		}
	}
	t, err := plan.BinaryType(op, l.Type, r.Type)
	if err != nil {
		return nil, c.src.errAt(ErrType, at, "%v", err)
	}
	return &plan.Expr{Op: op, Type: t, Args: []*plan.Expr{l, r}}, nil
}

// literalTarget is the type an untyped literal gets next to a value of type t under op:
// ts - '1 minute' is an interval.
func literalTarget(op plan.Op, t plan.Type) plan.Type {
	if t == plan.TypeTimestamp && (op == plan.OpAdd || op == plan.OpSub) {
		return plan.TypeInterval
	}
	return t
}

func (c *converter) aExpr(a *pg.A_Expr) (*plan.Expr, error) {
	name := ""
	if len(a.Name) > 0 {
		name = a.Name[len(a.Name)-1].GetString_().GetSval()
	}
	switch a.Kind {
	case pg.A_Expr_Kind_AEXPR_OP:
		if a.Lexpr == nil && name == "-" {
			r, err := c.expr(a.Rexpr)
			if err != nil {
				return nil, err
			}
			if !r.Type.Numeric() && r.Type != plan.TypeInterval && r.Type != plan.TypeNull {
				return nil, c.src.errAt(ErrType, a.Location, "operator - does not apply to %s", r.Type)
			}
			if r.Op == plan.OpConst {
				v, err := (&plan.Expr{Op: plan.OpNeg, Type: r.Type, Args: []*plan.Expr{r}}).Eval(nil)
				if err != nil {
					return nil, c.src.errAt(ErrType, a.Location, "%v", err)
				}
				return plan.Const(v, r.Type), nil
			}
			return &plan.Expr{Op: plan.OpNeg, Type: r.Type, Args: []*plan.Expr{r}}, nil
		}
		if a.Lexpr == nil && name == "+" {
			return c.expr(a.Rexpr)
		}
		op, ok := binaryOps[name]
		if !ok {
			return nil, c.src.errAt(ErrUnsupported, a.Location, "operator %s is not supported", name)
		}
		return c.binary(op, a.Lexpr, a.Rexpr, a.Location)
	case pg.A_Expr_Kind_AEXPR_LIKE:
		e, err := c.binary(plan.OpLike, a.Lexpr, a.Rexpr, a.Location)
		if err != nil || name == "~~" {
			return e, err
		}
		return &plan.Expr{Op: plan.OpNot, Type: plan.TypeBoolean, Args: []*plan.Expr{e}}, nil
	case pg.A_Expr_Kind_AEXPR_IN:
		l, err := c.expr(a.Lexpr)
		if err != nil {
			return nil, err
		}
		items := a.Rexpr.GetList().GetItems()
		args := []*plan.Expr{l}
		for _, it := range items {
			e, err := c.expr(it)
			if err != nil {
				return nil, err
			}
			if isLiteralText(it) && l.Type != plan.TypeText {
				if e, err = c.castTo(e, l.Type, location(it)); err != nil {
					return nil, err
				}
			}
			if _, err := plan.BinaryType(plan.OpEq, l.Type, e.Type); err != nil {
				return nil, c.src.errAt(ErrType, location(it), "IN: %v", err)
			}
			args = append(args, e)
		}
		e := &plan.Expr{Op: plan.OpIn, Type: plan.TypeBoolean, Args: args}
		if name == "<>" { // NOT IN
			return &plan.Expr{Op: plan.OpNot, Type: plan.TypeBoolean, Args: []*plan.Expr{e}}, nil
		}
		return e, nil
	case pg.A_Expr_Kind_AEXPR_BETWEEN, pg.A_Expr_Kind_AEXPR_NOT_BETWEEN:
		bounds := a.Rexpr.GetList().GetItems()
		lo, err := c.binary(plan.OpGe, a.Lexpr, bounds[0], a.Location)
		if err != nil {
			return nil, err
		}
		hi, err := c.binary(plan.OpLe, a.Lexpr, bounds[1], a.Location)
		if err != nil {
			return nil, err
		}
		e := &plan.Expr{Op: plan.OpAnd, Type: plan.TypeBoolean, Args: []*plan.Expr{lo, hi}}
		if a.Kind == pg.A_Expr_Kind_AEXPR_NOT_BETWEEN {
			return &plan.Expr{Op: plan.OpNot, Type: plan.TypeBoolean, Args: []*plan.Expr{e}}, nil
		}
		return e, nil
	case pg.A_Expr_Kind_AEXPR_NULLIF:
		l, err := c.expr(a.Lexpr)
		if err != nil {
			return nil, err
		}
		r, err := c.expr(a.Rexpr)
		if err != nil {
			return nil, err
		}
		return c.call("nullif", []*plan.Expr{l, r}, a.Location)
	}
	return nil, c.src.errAt(ErrUnsupported, a.Location, "this operator (%s) is not supported", strings.ToLower(strings.TrimPrefix(a.Kind.String(), "AEXPR_")))
}

func (c *converter) boolExpr(b *pg.BoolExpr) (*plan.Expr, error) {
	args, err := c.list(b.Args)
	if err != nil {
		return nil, err
	}
	for i, a := range args {
		if a.Type != plan.TypeBoolean && a.Type != plan.TypeNull {
			return nil, c.src.errAt(ErrType, location(b.Args[i]), "argument of %s must be boolean, not %s", strings.TrimSuffix(b.Boolop.String(), "_EXPR"), a.Type)
		}
	}
	if b.Boolop == pg.BoolExprType_NOT_EXPR {
		return &plan.Expr{Op: plan.OpNot, Type: plan.TypeBoolean, Args: args}, nil
	}
	op := plan.OpAnd
	if b.Boolop == pg.BoolExprType_OR_EXPR {
		op = plan.OpOr
	}
	e := args[0]
	for _, a := range args[1:] {
		e = &plan.Expr{Op: op, Type: plan.TypeBoolean, Args: []*plan.Expr{e, a}}
	}
	return e, nil
}

func (c *converter) caseExpr(k *pg.CaseExpr) (*plan.Expr, error) {
	var subject *pg.Node = k.Arg
	var args, results []*plan.Expr
	for _, w := range k.Args {
		cw := w.GetCaseWhen()
		var cond *plan.Expr
		var err error
		if subject != nil {
			cond, err = c.binary(plan.OpEq, subject, cw.Expr, cw.Location)
		} else {
			cond, err = c.expr(cw.Expr)
			if err == nil && cond.Type != plan.TypeBoolean && cond.Type != plan.TypeNull {
				err = c.src.errAt(ErrType, location(cw.Expr), "CASE WHEN condition must be boolean, not %s", cond.Type)
			}
		}
		if err != nil {
			return nil, err
		}
		r, err := c.expr(cw.Result)
		if err != nil {
			return nil, err
		}
		args = append(args, cond, r)
		results = append(results, r)
	}
	def := plan.Const(nil, plan.TypeNull)
	if k.Defresult != nil {
		var err error
		if def, err = c.expr(k.Defresult); err != nil {
			return nil, err
		}
	}
	results = append(results, def)
	t, err := c.unify(results, k.Location, "CASE")
	if err != nil {
		return nil, err
	}
	return &plan.Expr{Op: plan.OpCase, Type: t, Args: append(args, def)}, nil
}

// unify returns the common type of branches: equal types, or bigint and double (double).
func (c *converter) unify(es []*plan.Expr, at int32, what string) (plan.Type, error) {
	t := plan.TypeNull
	for _, e := range es {
		switch {
		case e.Type == plan.TypeNull || e.Type == t:
		case t == plan.TypeNull:
			t = e.Type
		case t.Numeric() && e.Type.Numeric():
			t = plan.TypeDouble
		default:
			return 0, c.src.errAt(ErrType, at, "%s types %s and %s cannot be matched", what, t, e.Type)
		}
	}
	return t, nil
}

func funcName(fc *pg.FuncCall) string {
	return strings.ToLower(fc.Funcname[len(fc.Funcname)-1].GetString_().GetSval())
}

func (c *converter) funcCall(fc *pg.FuncCall) (*plan.Expr, error) {
	name := funcName(fc)
	if _, ok := plan.ParseAgg(name); ok {
		if e, err := c.scope.aggregate(c, fc); e != nil || err != nil {
			return e, err
		}
		return nil, c.src.errAt(ErrUnsupported, fc.Location, "aggregate %s is not allowed here", name)
	}
	if fc.Over != nil || fc.AggFilter != nil || fc.AggStar || fc.AggDistinct || len(fc.AggOrder) > 0 {
		return nil, c.src.errAt(ErrUnsupported, fc.Location, "%s: OVER, FILTER, DISTINCT, * and ORDER BY apply only to aggregates", name)
	}
	if nondeterministic[name] {
		return nil, c.src.errAt(ErrUnsupported, fc.Location, "%s() is not deterministic: a view must compute the same values on every replica", name)
	}
	args, err := c.list(fc.Args)
	if err != nil {
		return nil, err
	}
	switch name {
	case "substring", "substr":
		name = "substr" + strconv.Itoa(len(args))
	case "char_length", "character_length":
		name = "length"
	case "trim":
		name = "btrim"
	case "coalesce":
		t, err := c.unify(args, fc.Location, "COALESCE")
		if err != nil {
			return nil, err
		}
		return &plan.Expr{Op: plan.OpCoalesce, Type: t, Args: args}, nil
	case "date_bin":
		if len(args) == 3 && isLiteralText(fc.Args[0]) {
			if args[0], err = c.castTo(args[0], plan.TypeInterval, location(fc.Args[0])); err != nil {
				return nil, err
			}
		}
		if len(args) == 3 && isLiteralText(fc.Args[2]) {
			if args[2], err = c.castTo(args[2], plan.TypeTimestamp, location(fc.Args[2])); err != nil {
				return nil, err
			}
		}
	}
	return c.call(name, args, fc.Location)
}

func (c *converter) call(name string, args []*plan.Expr, at int32) (*plan.Expr, error) {
	types := make([]plan.Type, len(args))
	for i, a := range args {
		types[i] = a.Type
	}
	t, ok, err := plan.FunctionType(name, types)
	if !ok {
		return nil, c.src.errAt(ErrUnknown, at, "function %s", strings.TrimRight(name, "23"))
	}
	if err != nil {
		return nil, c.src.errAt(ErrType, at, "%s: %v", strings.TrimRight(name, "23"), err)
	}
	return &plan.Expr{Op: plan.OpCall, Type: t, Name: name, Args: args}, nil
}

// location returns a node's byte offset, -1 if it has none.
func location(n *pg.Node) int32 {
	switch x := n.GetNode().(type) {
	case *pg.Node_ColumnRef:
		return x.ColumnRef.Location
	case *pg.Node_AConst:
		return x.AConst.Location
	case *pg.Node_TypeCast:
		return x.TypeCast.Location
	case *pg.Node_AExpr:
		return x.AExpr.Location
	case *pg.Node_BoolExpr:
		return x.BoolExpr.Location
	case *pg.Node_FuncCall:
		return x.FuncCall.Location
	case *pg.Node_CaseExpr:
		return x.CaseExpr.Location
	case *pg.Node_NullTest:
		return x.NullTest.Location
	case *pg.Node_CoalesceExpr:
		return x.CoalesceExpr.Location
	case *pg.Node_SubLink:
		return x.SubLink.Location
	case *pg.Node_RangeVar:
		return x.RangeVar.Location
	case *pg.Node_ResTarget:
		return x.ResTarget.Location
	case *pg.Node_RangeFunction:
		if fs := x.RangeFunction.Functions; len(fs) > 0 {
			if items := fs[0].GetList().GetItems(); len(items) > 0 {
				return location(items[0])
			}
		}
	}
	return -1
}

// nodeName names a node's kind for messages.
func nodeName(n *pg.Node) string {
	s := strings.TrimPrefix(fmt.Sprintf("%T", n.GetNode()), "*pg_query.Node_")
	return strings.ToLower(s)
}
