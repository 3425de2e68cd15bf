package modules

import (
	"fmt"
	"sync"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// The rewrite of a parsed module before it is compiled. Starlark's interpreter counts one
// step per instruction, but some instructions do work proportional to their operands: an
// operator (x * n, a + b, "%s" % v), a method (s.join(l), l.extend(l)), a slice copy, a
// call with *args. So that the step budget also bounds that work and the memory it takes,
// the rewrite routes them through hidden built-ins that charge it and check the size of
// what they build before building it (limits.go, ops.go):
//
//	x op y            → $binop(op, x, y)       (arithmetic, bitwise, comparisons, in)
//	x op= y           → x = $binop(op|aug, x, y), with temporaries for x[i] and x.f
//	x.name(args)      → $call(x, "name", args)  (name a method of str, bytes, list, dict, set)
//	x.name            → $attr(x, "name")        (likewise)
//	x[lo:hi:step]     → $sized(x)[lo:hi:step]
//	f(*a, **kw)       → f(*$sized(a), **$sized(kw))
//	x[k], {k: v}      → x[$key(k)], {$key(k): v}  (k not a literal)
//
// Comparisons, membership, hashing a key and the methods and built-ins that compare or
// copy charge a pass over the values they walk (a string per 32 bytes), counted through
// shared references, so x = [x, x] repeated cannot make one comparison cost 2^n. The hidden names start with
// "$", which no identifier in source can, so a module cannot call, shadow or redefine
// them.

// builtinMethods are the names of the methods of Starlark's built-in types: the only
// names through which a built-in method can be reached (besides getattr, which is
// charged), so the only attributes the rewrite routes through $call and $attr. The tx's
// methods and the record's fields keep the interpreter's direct path.
var builtinMethods = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	for _, v := range []starlark.HasAttrs{starlark.String(""), starlark.Bytes(""), starlark.NewList(nil), starlark.NewDict(0), starlark.NewSet(0)} {
		for _, n := range v.AttrNames() {
			names[n] = true
		}
	}
	return names
})

// Hidden built-in names.
const (
	nameBinop = "$binop"
	nameCall  = "$call"
	nameAttr  = "$attr"
	nameSized = "$sized"
	nameKey   = "$key"
)

// augFlag marks the operator of an augmented assignment in $binop's first argument.
const augFlag = 1 << 10

// rewriter rewrites one file.
type rewriter struct {
	temps int
}

func (w *rewriter) file(f *syntax.File) { f.Stmts = w.stmts(f.Stmts) }

func (w *rewriter) stmts(list []syntax.Stmt) []syntax.Stmt {
	if list == nil {
		return nil // IfStmt.Span tells an absent else by a nil list
	}
	out := make([]syntax.Stmt, 0, len(list))
	for _, s := range list {
		out = append(out, w.stmt(s)...)
	}
	return out
}

func (w *rewriter) stmt(s syntax.Stmt) []syntax.Stmt {
	switch s := s.(type) {
	case *syntax.ExprStmt:
		s.X = w.expr(s.X)
	case *syntax.IfStmt:
		s.Cond = w.expr(s.Cond)
		s.True = w.stmts(s.True)
		s.False = w.stmts(s.False)
	case *syntax.AssignStmt:
		if s.Op != syntax.EQ {
			return w.augmented(s)
		}
		s.LHS = w.target(s.LHS)
		s.RHS = w.expr(s.RHS)
	case *syntax.DefStmt:
		w.params(s.Params)
		s.Body = w.stmts(s.Body)
	case *syntax.ForStmt:
		s.Vars = w.target(s.Vars)
		s.X = w.expr(s.X)
		s.Body = w.stmts(s.Body)
	case *syntax.WhileStmt:
		s.Cond = w.expr(s.Cond)
		s.Body = w.stmts(s.Body)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = w.expr(s.Result)
		}
	}
	return []syntax.Stmt{s}
}

// target rewrites the subexpressions of an assignment target, not the target itself.
func (w *rewriter) target(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.IndexExpr:
		e.X, e.Y = w.expr(e.X), w.key(e.Y)
	case *syntax.DotExpr:
		e.X = w.expr(e.X)
	case *syntax.TupleExpr:
		for i := range e.List {
			e.List[i] = w.target(e.List[i])
		}
	case *syntax.ListExpr:
		for i := range e.List {
			e.List[i] = w.target(e.List[i])
		}
	case *syntax.ParenExpr:
		e.X = w.target(e.X)
	}
	return e
}

// augmented rewrites x op= y into plain assignments through $binop, evaluating the
// parts of x once, in the order the interpreter would.
func (w *rewriter) augmented(s *syntax.AssignStmt) []syntax.Stmt {
	op := s.Op - syntax.PLUS_EQ + syntax.PLUS
	rhs := w.expr(s.RHS)
	var pre []syntax.Stmt
	var read, store syntax.Expr
	switch lhs := s.LHS.(type) {
	case *syntax.Ident:
		read, store = &syntax.Ident{NamePos: lhs.NamePos, Name: lhs.Name}, lhs
	case *syntax.IndexExpr:
		x, y := w.temp(lhs.Lbrack), w.temp(lhs.Lbrack)
		pre = []syntax.Stmt{w.assign(x, w.expr(lhs.X)), w.assign(y, w.key(lhs.Y))}
		read = &syntax.IndexExpr{X: ident(x), Lbrack: lhs.Lbrack, Y: ident(y), Rbrack: lhs.Rbrack}
		store = &syntax.IndexExpr{X: ident(x), Lbrack: lhs.Lbrack, Y: ident(y), Rbrack: lhs.Rbrack}
	case *syntax.DotExpr:
		x := w.temp(lhs.Dot)
		pre = []syntax.Stmt{w.assign(x, w.expr(lhs.X))}
		read = w.expr(&syntax.DotExpr{X: ident(x), Dot: lhs.Dot, NamePos: lhs.NamePos, Name: lhs.Name})
		store = &syntax.DotExpr{X: ident(x), Dot: lhs.Dot, NamePos: lhs.NamePos, Name: &syntax.Ident{NamePos: lhs.NamePos, Name: lhs.Name.Name}}
	default:
		// The resolver rejects any other target; keep the statement for its message.
		s.RHS = rhs
		return []syntax.Stmt{s}
	}
	call := hiddenCall(nameBinop, s.OpPos, intLit(s.OpPos, int64(op)|augFlag), read, rhs)
	return append(pre, &syntax.AssignStmt{OpPos: s.OpPos, Op: syntax.EQ, LHS: store, RHS: call})
}

// temp names a fresh hidden variable; pos is where it comes from.
func (w *rewriter) temp(syntax.Position) string {
	w.temps++
	return fmt.Sprintf("$t%d", w.temps)
}

func (w *rewriter) assign(name string, rhs syntax.Expr) syntax.Stmt {
	start, _ := rhs.Span()
	return &syntax.AssignStmt{OpPos: start, Op: syntax.EQ, LHS: &syntax.Ident{NamePos: start, Name: name}, RHS: rhs}
}

func ident(name string) *syntax.Ident { return &syntax.Ident{Name: name} }

func intLit(pos syntax.Position, v int64) *syntax.Literal {
	return &syntax.Literal{Token: syntax.INT, TokenPos: pos, Raw: fmt.Sprint(v), Value: v}
}

func strLit(pos syntax.Position, s string) *syntax.Literal {
	return &syntax.Literal{Token: syntax.STRING, TokenPos: pos, Raw: fmt.Sprintf("%q", s), Value: s}
}

func hiddenCall(name string, pos syntax.Position, args ...syntax.Expr) *syntax.CallExpr {
	return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: pos, Name: name}, Lparen: pos, Args: args, Rparen: pos}
}

// params rewrites the default values of a function's parameters.
func (w *rewriter) params(ps []syntax.Expr) {
	for _, p := range ps {
		if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = w.expr(b.Y)
		}
	}
}

// args rewrites a call's arguments.
func (w *rewriter) args(as []syntax.Expr) {
	for i, a := range as {
		switch a := a.(type) {
		case *syntax.BinaryExpr:
			if a.Op == syntax.EQ { // name=value
				a.Y = w.expr(a.Y)
				continue
			}
		case *syntax.UnaryExpr:
			if a.Op == syntax.STAR || a.Op == syntax.STARSTAR {
				a.X = hiddenCall(nameSized, a.OpPos, w.expr(a.X))
				continue
			}
		}
		as[i] = w.expr(a)
	}
}

func (w *rewriter) expr(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.BinaryExpr:
		e.X, e.Y = w.expr(e.X), w.expr(e.Y)
		switch e.Op {
		case syntax.PLUS, syntax.MINUS, syntax.STAR, syntax.SLASH, syntax.SLASHSLASH, syntax.PERCENT,
			syntax.PIPE, syntax.AMP, syntax.CIRCUMFLEX, syntax.LTLT, syntax.GTGT, syntax.IN, syntax.NOT_IN,
			syntax.EQL, syntax.NEQ, syntax.LT, syntax.GT, syntax.LE, syntax.GE:
			return hiddenCall(nameBinop, e.OpPos, intLit(e.OpPos, int64(e.Op)), e.X, e.Y)
		}
		return e // and, or
	case *syntax.CallExpr:
		w.args(e.Args)
		if dot, ok := e.Fn.(*syntax.DotExpr); ok && builtinMethods()[dot.Name.Name] {
			args := append([]syntax.Expr{w.expr(dot.X), strLit(dot.NamePos, dot.Name.Name)}, e.Args...)
			return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: dot.NamePos, Name: nameCall}, Lparen: e.Lparen, Args: args, Rparen: e.Rparen}
		}
		e.Fn = w.expr(e.Fn)
	case *syntax.DotExpr:
		if !builtinMethods()[e.Name.Name] {
			e.X = w.expr(e.X) // a field or a method of the tx: nothing to charge
			return e
		}
		return hiddenCall(nameAttr, e.NamePos, w.expr(e.X), strLit(e.NamePos, e.Name.Name))
	case *syntax.SliceExpr:
		e.X = hiddenCall(nameSized, e.Lbrack, w.expr(e.X))
		for _, p := range []*syntax.Expr{&e.Lo, &e.Hi, &e.Step} {
			if *p != nil {
				*p = w.expr(*p)
			}
		}
	case *syntax.IndexExpr:
		e.X, e.Y = w.expr(e.X), w.key(e.Y)
	case *syntax.ParenExpr:
		e.X = w.expr(e.X)
	case *syntax.UnaryExpr:
		if e.X != nil {
			e.X = w.expr(e.X)
		}
	case *syntax.CondExpr:
		e.Cond, e.True, e.False = w.expr(e.Cond), w.expr(e.True), w.expr(e.False)
	case *syntax.ListExpr:
		for i := range e.List {
			e.List[i] = w.expr(e.List[i])
		}
	case *syntax.TupleExpr:
		for i := range e.List {
			e.List[i] = w.expr(e.List[i])
		}
	case *syntax.DictExpr:
		for _, en := range e.List {
			en := en.(*syntax.DictEntry)
			en.Key, en.Value = w.key(en.Key), w.expr(en.Value)
		}
	case *syntax.Comprehension:
		e.Body = w.expr(e.Body)
		for _, c := range e.Clauses {
			switch c := c.(type) {
			case *syntax.ForClause:
				c.Vars = w.target(c.Vars)
				c.X = w.expr(c.X)
			case *syntax.IfClause:
				c.Cond = w.expr(c.Cond)
			}
		}
	case *syntax.LambdaExpr:
		w.params(e.Params)
		e.Body = w.expr(e.Body)
	case *syntax.DictEntry:
		e.Key, e.Value = w.key(e.Key), w.expr(e.Value)
	}
	return e
}

// key rewrites an index or dict key: a literal stays, anything else goes through $key.
func (w *rewriter) key(e syntax.Expr) syntax.Expr {
	if _, ok := e.(*syntax.Literal); ok {
		return e
	}
	start, _ := e.Span()
	return hiddenCall(nameKey, start, w.expr(e))
}
