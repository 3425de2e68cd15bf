package plan

import (
	"bytes"
	"fmt"
	"math"
	"strings"
)

// Op is an expression node's operator.
type Op uint8

// The operators. Args are the operands, in order.
const (
	OpCol       Op = iota + 1 // Col: the input row's column
	OpConst                   // Val: the canonical encoding of a constant of Type
	OpNeg                     // -a
	OpAdd                     // a + b (numbers; timestamp + interval; interval + interval)
	OpSub                     // a - b (numbers; timestamp - interval; timestamp - timestamp)
	OpMul                     // a * b
	OpDiv                     // a / b (bigint: truncated toward zero)
	OpMod                     // a % b (bigint)
	OpEq                      // a = b
	OpNe                      // a <> b
	OpLt                      // a < b
	OpLe                      // a <= b
	OpGt                      // a > b
	OpGe                      // a >= b
	OpAnd                     // a AND b, three-valued
	OpOr                      // a OR b, three-valued
	OpNot                     // NOT a
	OpIsNull                  // a IS NULL
	OpIsNotNull               // a IS NOT NULL
	OpCase                    // CASE WHEN a0 THEN a1 … ELSE a(n-1) END (the ELSE is always there)
	OpCoalesce                // COALESCE(a…)
	OpCast                    // CAST(a AS Type)
	OpConcat                  // a || b
	OpLike                    // a LIKE b
	OpIn                      // a IN (a1…)
	OpCall                    // Name(a…): a scalar function of funcs.go
	opEnd
)

// Expr is a typed expression over a row. Expressions are values of the plan: they are
// checked when the plan is decoded (Validate) and evaluated by Eval.
type Expr struct {
	Op   Op      `msgpack:"o"`
	Type Type    `msgpack:"t"`
	Col  int     `msgpack:"c,omitempty"`
	Val  []byte  `msgpack:"v,omitempty"`
	Name string  `msgpack:"n,omitempty"`
	Args []*Expr `msgpack:"a,omitempty"`

	val any // Val decoded, by prepare
}

// ColumnRef returns the expression reading column i of type t.
func ColumnRef(i int, t Type) *Expr { return &Expr{Op: OpCol, Type: t, Col: i} }

// Const returns the expression of constant v of type t.
func Const(v any, t Type) *Expr { return &Expr{Op: OpConst, Type: t, Val: EncodeValue(v), val: v} }

// Equal reports whether two expressions are the same tree.
func (e *Expr) Equal(o *Expr) bool {
	if e == nil || o == nil {
		return e == o
	}
	if e.Op != o.Op || e.Type != o.Type || e.Col != o.Col || !bytes.Equal(e.Val, o.Val) || e.Name != o.Name || len(e.Args) != len(o.Args) {
		return false
	}
	for i := range e.Args {
		if !e.Args[i].Equal(o.Args[i]) {
			return false
		}
	}
	return true
}

// prepare checks the expression over a row of the given column types and decodes its
// constants. It checks what a decoded plan must hold: operand counts and types.
func (e *Expr) prepare(cols []Type) error {
	if e == nil {
		return fmt.Errorf("%w: missing expression", ErrBadPlan)
	}
	if e.Op == 0 || e.Op >= opEnd || e.Type >= typeEnd {
		return fmt.Errorf("%w: expression op %d type %d", ErrBadPlan, e.Op, e.Type)
	}
	for _, a := range e.Args {
		if err := a.prepare(cols); err != nil {
			return err
		}
	}
	n := len(e.Args)
	bad := func(why string) error { return fmt.Errorf("%w: expression op %d: %s", ErrBadPlan, e.Op, why) }
	switch e.Op {
	case OpCol:
		if e.Col < 0 || e.Col >= len(cols) || cols[e.Col] != e.Type {
			return bad(fmt.Sprintf("column %d of %s", e.Col, e.Type))
		}
	case OpConst:
		v, err := DecodeValue(e.Val, e.Type)
		if err != nil {
			return bad(err.Error())
		}
		e.val = v
	case OpNeg, OpNot, OpIsNull, OpIsNotNull, OpCast:
		if n != 1 {
			return bad("one operand")
		}
		a := e.Args[0].Type
		switch {
		case e.Op == OpNot && (!isBool(a) || e.Type != TypeBoolean):
			return bad("NOT of " + a.String())
		case e.Op == OpNeg && (!(a.Numeric() || a == TypeInterval || a == TypeNull) || e.Type != a):
			return bad("- of " + a.String())
		case (e.Op == OpIsNull || e.Op == OpIsNotNull) && e.Type != TypeBoolean:
			return bad("IS NULL is boolean")
		case e.Op == OpCast && (!e.Type.Valid() || !CastType(a, e.Type)):
			return bad("cast of " + a.String() + " to " + e.Type.String())
		}
	case OpCase:
		if n < 3 || n%2 == 0 {
			return bad("CASE operands")
		}
		for i := 0; i+1 < n; i += 2 {
			if !isBool(e.Args[i].Type) || !assignable(e.Args[i+1].Type, e.Type) {
				return bad("CASE branch types")
			}
		}
		if !assignable(e.Args[n-1].Type, e.Type) {
			return bad("CASE ELSE type")
		}
	case OpCoalesce:
		if n < 2 {
			return bad("operands")
		}
		for _, a := range e.Args {
			if !assignable(a.Type, e.Type) {
				return bad("COALESCE types")
			}
		}
	case OpIn:
		if n < 2 || e.Type != TypeBoolean {
			return bad("operands")
		}
		for _, a := range e.Args[1:] {
			if _, err := BinaryType(OpEq, e.Args[0].Type, a.Type); err != nil {
				return bad(err.Error())
			}
		}
	case OpCall:
		f, ok := funcs[e.Name]
		if !ok {
			return bad("unknown function " + e.Name)
		}
		if t, err := f.check(argTypes(e.Args)); err != nil || t != e.Type {
			return bad(fmt.Sprintf("%s is %s, not %s (%v)", e.Name, t, e.Type, err))
		}
	default:
		if n != 2 {
			return bad("two operands")
		}
		if t, err := BinaryType(e.Op, e.Args[0].Type, e.Args[1].Type); err != nil || t != e.Type {
			return bad(fmt.Sprintf("result %s, not %s (%v)", t, e.Type, err))
		}
	}
	return nil
}

func isBool(t Type) bool { return t == TypeBoolean || t == TypeNull }

// assignable reports whether a value of type from can be the value of an expression of
// type to: the same type, NULL, or a bigint where a double is wanted.
func assignable(from, to Type) bool {
	return from == to || from == TypeNull || (from == TypeBigint && to == TypeDouble)
}

func argTypes(args []*Expr) []Type {
	ts := make([]Type, len(args))
	for i, a := range args {
		ts[i] = a.Type
	}
	return ts
}

// BinaryType returns the result type of a binary operator over operands of types a and
// b, or an error saying why they do not go together. TypeNull goes with everything.
func BinaryType(op Op, a, b Type) (Type, error) {
	if a == TypeNull {
		a = b
	}
	if b == TypeNull {
		b = a
	}
	num := a.Numeric() && b.Numeric()
	wider := TypeBigint
	if a == TypeDouble || b == TypeDouble {
		wider = TypeDouble
	}
	switch op {
	case OpAdd, OpSub:
		switch {
		case num:
			return wider, nil
		case a == TypeTimestamp && b == TypeInterval:
			return TypeTimestamp, nil
		case op == OpAdd && a == TypeInterval && b == TypeTimestamp:
			return TypeTimestamp, nil
		case a == TypeInterval && b == TypeInterval:
			return TypeInterval, nil
		case op == OpSub && a == TypeTimestamp && b == TypeTimestamp:
			return TypeInterval, nil
		case a == TypeNull:
			return TypeNull, nil
		}
	case OpMul, OpDiv:
		switch {
		case num, a == TypeNull:
			return wider, nil
		case a == TypeInterval && b == TypeBigint:
			return TypeInterval, nil
		}
	case OpMod:
		if (a == TypeBigint || a == TypeNull) && b == a {
			return TypeBigint, nil
		}
	case OpEq, OpNe, OpLt, OpLe, OpGt, OpGe:
		if num || a == b {
			return TypeBoolean, nil
		}
	case OpAnd, OpOr:
		if (a == TypeBoolean || a == TypeNull) && a == b {
			return TypeBoolean, nil
		}
	case OpConcat:
		if (a == TypeText || a == TypeNull) && a == b {
			return TypeText, nil
		}
	case OpLike:
		if (a == TypeText || a == TypeNull) && a == b {
			return TypeBoolean, nil
		}
	}
	return TypeNull, fmt.Errorf("operator %s does not apply to %s and %s", opNames[op], a, b)
}

var opNames = map[Op]string{OpAdd: "+", OpSub: "-", OpMul: "*", OpDiv: "/", OpMod: "%", OpEq: "=", OpNe: "<>",
	OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">=", OpAnd: "AND", OpOr: "OR", OpConcat: "||", OpLike: "LIKE"}

// Eval evaluates the expression over row. Errors wrap ErrEval.
func (e *Expr) Eval(row []any) (any, error) {
	switch e.Op {
	case OpCol:
		return row[e.Col], nil
	case OpConst:
		return e.val, nil
	case OpAnd, OpOr:
		return e.logic(row)
	case OpCase:
		for i := 0; i+1 < len(e.Args); i += 2 {
			c, err := e.Args[i].Eval(row)
			if err != nil {
				return nil, err
			}
			if c == true {
				return e.castResult(e.Args[i+1].Eval(row))
			}
		}
		return e.castResult(e.Args[len(e.Args)-1].Eval(row))
	case OpCoalesce:
		for _, a := range e.Args {
			v, err := a.Eval(row)
			if err != nil || v != nil {
				return e.castResult(v, err)
			}
		}
		return nil, nil
	}
	args := make([]any, len(e.Args))
	for i, a := range e.Args {
		v, err := a.Eval(row)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	switch e.Op {
	case OpIsNull:
		return args[0] == nil, nil
	case OpIsNotNull:
		return args[0] != nil, nil
	case OpNot:
		if args[0] == nil {
			return nil, nil
		}
		return !args[0].(bool), nil
	case OpNeg:
		switch x := args[0].(type) {
		case int64:
			if x == math.MinInt64 {
				return nil, fmt.Errorf("%w: bigint out of range", ErrEval)
			}
			return -x, nil
		case float64:
			return -x, nil
		}
		return nil, nil
	case OpCast:
		return Cast(args[0], e.Type)
	case OpIn:
		if args[0] == nil {
			return nil, nil
		}
		sawNull := false
		for i, v := range args[1:] {
			if v == nil {
				sawNull = true
				continue
			}
			if c, _ := compareValues(args[0], v, e.Args[0].Type, e.Args[i+1].Type); c == 0 {
				return true, nil
			}
		}
		if sawNull {
			return nil, nil
		}
		return false, nil
	case OpCall:
		for _, a := range args {
			if a == nil && !funcs[e.Name].nulls {
				return nil, nil // strict functions: NULL in, NULL out
			}
		}
		return funcs[e.Name].fn(args, argTypes(e.Args))
	}
	if args[0] == nil || args[1] == nil {
		return nil, nil
	}
	return evalBinary(e.Op, args[0], args[1], e.Args[0].Type, e.Args[1].Type)
}

// castResult converts a branch's value to the expression's type (a bigint branch of a
// double CASE, say).
func (e *Expr) castResult(v any, err error) (any, error) {
	if err != nil || v == nil {
		return v, err
	}
	if f, ok := v.(int64); ok && e.Type == TypeDouble {
		return float64(f), nil
	}
	return v, nil
}

func (e *Expr) logic(row []any) (any, error) {
	a, err := e.Args[0].Eval(row)
	if err != nil {
		return nil, err
	}
	short := e.Op == OpOr // OR: true decides; AND: false decides
	if a == short {
		return short, nil
	}
	b, err := e.Args[1].Eval(row)
	if err != nil {
		return nil, err
	}
	if b == short {
		return short, nil
	}
	if a == nil || b == nil {
		return nil, nil
	}
	return !short, nil
}

func evalBinary(op Op, a, b any, ta, tb Type) (any, error) {
	switch op {
	case OpEq, OpNe, OpLt, OpLe, OpGt, OpGe:
		c, err := compareValues(a, b, ta, tb)
		if err != nil {
			return nil, err
		}
		switch op {
		case OpEq:
			return c == 0, nil
		case OpNe:
			return c != 0, nil
		case OpLt:
			return c < 0, nil
		case OpLe:
			return c <= 0, nil
		case OpGt:
			return c > 0, nil
		}
		return c >= 0, nil
	case OpConcat:
		return a.(string) + b.(string), nil
	case OpLike:
		return like(a.(string), b.(string)), nil
	}
	x, xi := a.(int64)
	y, yi := b.(int64)
	if xi && yi {
		return intArith(op, x, y)
	}
	return floatArith(op, toFloat(a), toFloat(b))
}

func toFloat(v any) float64 {
	if i, ok := v.(int64); ok {
		return float64(i)
	}
	return v.(float64)
}

func intArith(op Op, x, y int64) (any, error) {
	var r int64
	ok := true
	switch op {
	case OpAdd:
		r = x + y
		ok = (r > x) == (y > 0)
	case OpSub:
		r = x - y
		ok = (r < x) == (y > 0)
	case OpMul:
		if x != 0 && y != 0 {
			r = x * y
			ok = r/y == x && !(x == -1 && y == math.MinInt64) && !(y == -1 && x == math.MinInt64)
		}
	case OpDiv, OpMod:
		if y == 0 {
			return nil, fmt.Errorf("%w: division by zero", ErrEval)
		}
		if y == -1 {
			if op == OpMod {
				return int64(0), nil
			}
			ok = x != math.MinInt64
			r = -x
		} else if op == OpDiv {
			r = x / y // Go truncates toward zero, as PostgreSQL does
		} else {
			r = x % y // the sign of the dividend, as PostgreSQL
		}
	}
	if !ok {
		return nil, fmt.Errorf("%w: bigint out of range", ErrEval)
	}
	return r, nil
}

func floatArith(op Op, x, y float64) (any, error) {
	switch op {
	case OpAdd:
		return x + y, nil
	case OpSub:
		return x - y, nil
	case OpMul:
		return x * y, nil
	case OpDiv:
		if y == 0 {
			return nil, fmt.Errorf("%w: division by zero", ErrEval)
		}
		return x / y, nil
	}
	return nil, fmt.Errorf("%w: operator %s on double", ErrEval, opNames[op])
}

// compareValues orders two non-NULL values: numbers numerically (bigint against double
// as doubles), text and bytea by bytes (the C collation), false before true.
func compareValues(a, b any, ta, tb Type) (int, error) {
	switch x := a.(type) {
	case int64:
		if y, ok := b.(int64); ok {
			return cmpOrdered(x, y), nil
		}
		return cmpFloat(float64(x), toFloat(b)), nil
	case float64:
		return cmpFloat(x, toFloat(b)), nil
	case string:
		return strings.Compare(x, b.(string)), nil
	case []byte:
		return bytes.Compare(x, b.([]byte)), nil
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0, nil
		case !x:
			return -1, nil
		}
		return 1, nil
	}
	return 0, fmt.Errorf("%w: cannot compare %s with %s", ErrEval, ta, tb)
}

func cmpOrdered[T int64 | string](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpFloat orders doubles as PostgreSQL does: NaN above everything and equal to itself.
func cmpFloat(a, b float64) int {
	switch an, bn := math.IsNaN(a), math.IsNaN(b); {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// like matches s against a LIKE pattern: % any run, _ one character, \ escapes.
func like(s, p string) bool {
	sr, pr := []rune(s), []rune(p)
	var m func(i, j int) bool
	m = func(i, j int) bool {
		for j < len(pr) {
			switch pr[j] {
			case '%':
				for k := i; k <= len(sr); k++ {
					if m(k, j+1) {
						return true
					}
				}
				return false
			case '_':
				if i >= len(sr) {
					return false
				}
			case '\\':
				if j+1 < len(pr) {
					j++
				}
				fallthrough
			default:
				if i >= len(sr) || sr[i] != pr[j] {
					return false
				}
			}
			i++
			j++
		}
		return i == len(sr)
	}
	return m(0, 0)
}
