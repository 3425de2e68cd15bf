package modules

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// The hidden built-ins the rewrite (rewrite.go) routes operators, methods and slices
// through, and the charged versions of the universe's functions. Each predicts the size
// of what it will build where an operand could make it large (x * n, a + b, sep.join,
// s.replace, "%s" % v, format), refuses it past the bounds before building it, then
// charges the size of the result as steps.

// binop is $binop(op, x, y).
func binop(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	code, _ := args[0].(starlark.Int).Int64()
	x, y := args[1], args[2]
	op := syntax.Token(code &^ augFlag)
	b := budgetOf(t)
	if err := b.predictBinop(op, x, y); err != nil {
		return nil, err
	}
	if code&augFlag != 0 {
		// x += y on a list and x |= y on a dict change x in place (Starlark's semantics).
		if l, ok := x.(*starlark.List); ok && op == syntax.PLUS {
			if it, ok := y.(starlark.Iterable); ok {
				if err := b.charge(cost(y)); err != nil {
					return nil, err
				}
				var elems []starlark.Value // collected first: y may be x itself
				var v starlark.Value
				iter := it.Iterate()
				for iter.Next(&v) {
					if err := b.checkElements(l.Len() + len(elems) + 1); err != nil {
						iter.Done()
						return nil, err
					}
					elems = append(elems, v)
				}
				iter.Done()
				for _, v := range elems {
					if err := l.Append(v); err != nil {
						return nil, err
					}
				}
				return l, nil
			}
		}
		if d, ok := x.(*starlark.Dict); ok && op == syntax.PIPE {
			if o, ok := y.(*starlark.Dict); ok {
				if err := b.checkElements(d.Len() + o.Len()); err != nil {
					return nil, err
				}
				if err := b.charge(o.Len()); err != nil {
					return nil, err
				}
				for _, kv := range o.Items() {
					if err := d.SetKey(kv[0], kv[1]); err != nil {
						return nil, err
					}
				}
				return d, nil
			}
		}
	}
	switch op {
	case syntax.IN, syntax.NOT_IN:
		// Membership hashes x (a dict or set) or compares it with y's elements: a pass
		// over x, and over y unless y hashes.
		var err error
		switch y.(type) {
		case *starlark.Dict, *starlark.Set:
			if scalar(x) {
				err = b.charge(cost(x)) // hashing a string reads all of it
			} else {
				err = b.chargeDeep(x)
			}
		case starlark.String, starlark.Bytes:
			err = b.charge(cost(x) + cost(y))
		default:
			err = b.chargeDeep(x, y)
		}
		if err != nil {
			return nil, err
		}
	case syntax.EQL, syntax.NEQ, syntax.LT, syntax.GT, syntax.LE, syntax.GE:
		// A comparison walks both values as far as the smaller one goes.
		work := min(cost(x), cost(y))
		if !scalar(x) || !scalar(y) {
			limit := b.remaining()
			work = min(deepCost(x, limit, 0), deepCost(y, limit, 0))
		}
		if err := b.charge(work); err != nil {
			return nil, err
		}
		ok, err := starlark.Compare(op, x, y)
		if err != nil {
			return nil, err
		}
		return starlark.Bool(ok), nil
	}
	z, err := starlark.Binary(op, x, y)
	if err != nil {
		return nil, err
	}
	return b.built(z)
}

// predictBinop refuses x op y before it is computed if its result would be past the
// bounds.
func (b *budget) predictBinop(op syntax.Token, x, y starlark.Value) error {
	switch op {
	case syntax.STAR:
		if _, ok := x.(starlark.Int); ok {
			x, y = y, x
		}
		n, ok := y.(starlark.Int)
		if !ok {
			return nil
		}
		if xi, ok := x.(starlark.Int); ok {
			if bits := intBits(xi) + intBits(n); bits > b.opts.MaxIntBits+64 {
				return b.exceeded(limitIntBits, "product of %d bits, limit %d", bits, b.opts.MaxIntBits)
			}
			return nil
		}
		count, ok := n.Int64()
		if !ok || count < 0 {
			count = 0
			if !ok {
				count = 1 << 40
			}
		}
		return b.predictLen(x, count, 0)
	case syntax.PLUS, syntax.PIPE:
		return b.predictLen(x, 1, int64(starlark.Len(y)))
	case syntax.LTLT:
		if xi, ok := x.(starlark.Int); ok {
			if n, ok := y.(starlark.Int); ok {
				s, ok := n.Int64()
				if !ok || int64(intBits(xi))+s > int64(b.opts.MaxIntBits)+64 {
					return b.exceeded(limitIntBits, "shift past %d bits", b.opts.MaxIntBits)
				}
			}
		}
	case syntax.PERCENT:
		if f, ok := x.(starlark.String); ok {
			if err := b.checkRepr(y); err != nil {
				return err
			}
			// Each directive prints at most all of y, or a float of up to 320 digits (%f).
			n, _ := b.reprSize(y, b.opts.MaxValueBytes, 0)
			return b.predictBytes(len(f) + strings.Count(string(f), "%")*(n+320))
		}
	}
	return nil
}

// predictLen refuses a sequence of len(x)*times+extra elements or bytes (x a sequence).
func (b *budget) predictLen(x starlark.Value, times, extra int64) error {
	n := int64(starlark.Len(x))
	if n < 0 {
		return nil
	}
	total := n*min(times, 1<<32) + max(extra, 0)
	switch x.(type) {
	case starlark.String, starlark.Bytes:
		return b.predictBytes(int(min(total, 1<<40)))
	case *starlark.List, starlark.Tuple, *starlark.Dict, *starlark.Set:
		return b.checkElements(int(min(total, 1<<40)))
	}
	return nil
}

func (b *budget) predictBytes(n int) error {
	if err := b.checkBytes(n); err != nil {
		return err
	}
	return nil
}

// cheapMethods do constant work (beyond hashing a key), so $call charges only their
// result.
var cheapMethods = map[string]bool{
	"get": true, "append": true, "pop": true, "setdefault": true, "add": true, "discard": true,
	"clear": true, "popitem": true, "startswith": true, "endswith": true,
}

// call is $call(x, name, args...): a method call.
func call(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	x := args[0]
	name := string(args[1].(starlark.String))
	rest := args[2:]
	switch r := x.(type) {
	case *txValue:
		return r.call(t, name, rest, kwargs)
	case *recordValue:
		m, err := r.Attr(name)
		if err != nil {
			return nil, err
		}
		return starlark.Call(t, m, rest, kwargs)
	}
	m, err := attrOf(x, name)
	if err != nil {
		return nil, err
	}
	return callMethod(t, x, name, m, rest, kwargs)
}

// callMethod calls m, the method name of x, charged.
func callMethod(t *starlark.Thread, x starlark.Value, name string, m starlark.Value, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if _, ok := m.(*starlark.Builtin); !ok {
		return starlark.Call(t, m, args, kwargs) // a module's own function stored in a field
	}
	b := budgetOf(t)
	if cheapMethods[name] {
		// Constant work, but hashing or comparing a compound key walks it, and
		// list.pop(i) moves the elements after i.
		for _, a := range args {
			var err error
			if scalar(a) {
				err = b.charge(cost(a)) // hashing a string reads all of it
			} else {
				err = b.chargeDeep(a)
			}
			if err != nil {
				return nil, err
			}
		}
		if name == "pop" && len(args) > 0 {
			if err := b.charge(cost(x)); err != nil {
				return nil, err
			}
		}
	} else {
		// A pass over the arguments, and over the receiver as the method goes over it:
		// comparing every element (index, count, remove), not at all (extend and update
		// add to it), or copying or scanning it once (items, keys, split, upper, ...).
		var err error
		switch name {
		case "index", "count", "remove":
			err = b.chargeDeep(x)
		case "extend", "update":
		default:
			err = b.charge(cost(x))
		}
		if err != nil {
			return nil, err
		}
		for _, a := range args {
			if err := b.chargeDeep(a); err != nil {
				return nil, err
			}
		}
		if err := b.predictMethod(x, name, args); err != nil {
			return nil, err
		}
	}
	v, err := starlark.Call(t, m, args, kwargs)
	if err != nil {
		return nil, err
	}
	if name == "extend" || name == "update" || name == "insert" {
		if err := b.checkSize(x); err != nil {
			return nil, err
		}
	}
	return b.built(v)
}

// predictMethod refuses a method call whose result would be past the bounds: the ones
// whose result can be much larger than their receiver and arguments.
func (b *budget) predictMethod(x starlark.Value, name string, args starlark.Tuple) error {
	switch name {
	case "join":
		sep, ok := x.(starlark.String)
		if !ok || len(args) != 1 {
			return nil
		}
		n := starlark.Len(args[0])
		if n < 0 {
			return nil
		}
		total := len(sep) * max(n-1, 0)
		if it, ok := args[0].(starlark.Iterable); ok && total <= b.opts.MaxValueBytes {
			iter := it.Iterate()
			defer iter.Done()
			var v starlark.Value
			for iter.Next(&v) {
				if s, ok := v.(starlark.String); ok {
					total += len(s)
				}
				if total > b.opts.MaxValueBytes {
					break
				}
			}
		}
		return b.predictBytes(total)
	case "replace":
		s, ok := x.(starlark.String)
		if !ok || len(args) < 2 {
			return nil
		}
		old, ok1 := args[0].(starlark.String)
		repl, ok2 := args[1].(starlark.String)
		if !ok1 || !ok2 {
			return nil
		}
		count := strings.Count(string(s), string(old))
		if len(old) == 0 {
			count = utf8.RuneCountInString(string(s)) + 1
		}
		if len(args) > 2 {
			if c, ok := args[2].(starlark.Int); ok {
				if ci, ok := c.Int64(); ok && ci >= 0 && ci < int64(count) {
					count = int(ci)
				}
			}
		}
		return b.predictBytes(len(s) + count*max(len(repl)-len(old), 0))
	case "format":
		f, ok := x.(starlark.String)
		if !ok {
			return nil
		}
		if err := b.checkRepr(args...); err != nil {
			return err
		}
		n := 0
		for _, a := range args {
			s, _ := b.reprSize(a, b.opts.MaxValueBytes, 0)
			n += s
		}
		return b.predictBytes(len(f) + strings.Count(string(f), "{")*n)
	case "extend", "update", "union":
		total := int64(0)
		for _, a := range args {
			total += int64(max(starlark.Len(a), 0))
		}
		return b.predictLen(x, 1, total)
	case "upper", "lower", "title", "capitalize", "swapcase":
		return b.predictLen(x, 3, 0)
	}
	return nil
}

// attrOf returns the attribute name of x.
func attrOf(x starlark.Value, name string) (starlark.Value, error) {
	h, ok := x.(starlark.HasAttrs)
	if !ok {
		return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
	}
	v, err := h.Attr(name)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
	}
	return v, nil
}

// attr is $attr(x, name): a field, or a method value that calls through callMethod.
func attr(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	return chargedAttr(args[0], string(args[1].(starlark.String)))
}

func chargedAttr(x starlark.Value, name string) (starlark.Value, error) {
	if tv, ok := x.(*txValue); ok {
		return tv.method(name)
	}
	v, err := attrOf(x, name)
	if err != nil {
		return nil, err
	}
	m, ok := v.(*starlark.Builtin)
	if !ok {
		return v, nil
	}
	return starlark.NewBuiltin(m.Name(), func(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		return callMethod(t, x, name, m, args, kwargs)
	}), nil
}

// key is $key(x): an index or dict key, charged a pass over x (hashing reads all of a
// string, and a tuple element by element).
func key(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	b := budgetOf(t)
	var err error
	if scalar(args[0]) {
		err = b.charge(cost(args[0])) // hashing a string reads all of it
	} else {
		err = b.chargeDeep(args[0])
	}
	if err != nil {
		return nil, err
	}
	return args[0], nil
}

// sized is $sized(x): charges x's size (a slice or *args copies up to all of it).
func sized(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	if err := budgetOf(t).charge(cost(args[0])); err != nil {
		return nil, err
	}
	return args[0], nil
}

// charged wraps a universe function: it charges the size of its arguments (an iterable
// argument's length: list(range(n)) builds n elements), checks the string forms of the
// arguments of those that print them, and charges and checks the result.
func charged(name string, printing bool) *starlark.Builtin {
	fn := starlark.Universe[name].(*starlark.Builtin)
	return starlark.NewBuiltin(name, func(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		b := budgetOf(t)
		for _, a := range args {
			if _, ok := a.(starlark.String); !ok && starlark.Len(a) > b.opts.MaxElements {
				// An iterable too long to materialise: list(range(n)).
				return nil, b.exceeded(limitElements, "%s of %d elements, limit %d", name, starlark.Len(a), b.opts.MaxElements)
			}
		}
		if printing {
			if err := b.checkRepr(args...); err != nil {
				return nil, err
			}
		}
		// A pass over every argument (a range: its length), once more per halving for
		// the sorts, which compare elements n log n times.
		passes := 1
		if (name == "sorted" || name == "max" || name == "min") && len(args) > 0 {
			for n := max(starlark.Len(args[0]), 1); n > 1; n /= 2 {
				passes++
			}
		}
		for range passes {
			for _, a := range args {
				if err := b.charge(materialCost(a)); err != nil {
					return nil, err
				}
				if !scalar(a) {
					if err := b.chargeDeep(a); err != nil {
						return nil, err
					}
				}
			}
			for _, kv := range kwargs {
				if err := b.chargeDeep(kv[1]); err != nil {
					return nil, err
				}
			}
		}
		if name == "int" && len(args) > 0 {
			if s, ok := args[0].(starlark.String); ok && len(s) > b.opts.MaxIntBits/3 {
				return nil, b.exceeded(limitIntBits, "int() of a %d-byte string", len(s))
			}
		}
		v, err := starlark.Call(t, fn, args, kwargs)
		if err != nil {
			return nil, err
		}
		return b.built(v)
	})
}

// materialCost is cost, counting the length of any iterable (a range) too.
func materialCost(v starlark.Value) int {
	if c := cost(v); c > 0 {
		return c
	}
	if _, ok := v.(starlark.Iterable); ok {
		return max(starlark.Len(v), 0)
	}
	return 0
}

// getattrFn is getattr(x, name[, default]) through chargedAttr.
func getattrFn(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x, def starlark.Value
	var name string
	if err := starlark.UnpackPositionalArgs("getattr", args, kwargs, 2, &x, &name, &def); err != nil {
		return nil, err
	}
	v, err := chargedAttr(x, name)
	if err != nil && def != nil {
		return def, nil
	}
	return v, err
}

// printFn is print: modules have no output, so it checks and discards its arguments.
func printFn(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	if err := budgetOf(t).checkRepr(args...); err != nil {
		return nil, err
	}
	return starlark.None, nil
}

// runtimePredeclared are the names every module's code sees besides the universe: the
// hidden built-ins and the charged universe functions shadowing the originals.
func runtimePredeclared() starlark.StringDict {
	d := starlark.StringDict{
		nameBinop: starlark.NewBuiltin(nameBinop, binop),
		nameCall:  starlark.NewBuiltin(nameCall, call),
		nameAttr:  starlark.NewBuiltin(nameAttr, attr),
		nameSized: starlark.NewBuiltin(nameSized, sized),
		nameKey:   starlark.NewBuiltin(nameKey, key),
		"getattr": starlark.NewBuiltin("getattr", getattrFn),
		"print":   starlark.NewBuiltin("print", printFn),
	}
	for _, n := range []string{"all", "any", "bool", "bytes", "dict", "enumerate", "float", "hash", "int",
		"list", "max", "min", "reversed", "set", "sorted", "tuple", "zip"} {
		d[n] = charged(n, false)
	}
	for _, n := range []string{"str", "repr", "fail"} {
		d[n] = charged(n, true)
	}
	return d
}
