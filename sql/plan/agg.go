package plan

import (
	"bytes"
	"fmt"
	"slices"
)

// AggFunc is an aggregate function.
type AggFunc uint8

// The aggregate functions. Each ignores NULL arguments, as SQL's do; COUNT(*) counts
// rows.
const (
	AggCount AggFunc = iota + 1 // COUNT(x) (non-NULL values) or COUNT(*) (Arg nil): bigint
	AggSum                      // SUM(x): the argument's type; NULL over no values
	AggMin                      // MIN(x)
	AggMax                      // MAX(x)
	AggAvg                      // AVG(x): double
	aggEnd
)

var aggNames = [...]string{"", "count", "sum", "min", "max", "avg"}

// String returns the aggregate's SQL name.
func (f AggFunc) String() string {
	if f > 0 && f < aggEnd {
		return aggNames[f]
	}
	return fmt.Sprintf("agg(%d)", uint8(f))
}

// ParseAgg returns the aggregate function named name.
func ParseAgg(name string) (AggFunc, bool) {
	for i, n := range aggNames {
		if i > 0 && n == name {
			return AggFunc(i), true
		}
	}
	return 0, false
}

// Agg is one aggregate of a view.
type Agg struct {
	Func AggFunc `msgpack:"f"`
	// Arg is the argument, over the view's input row; nil for COUNT(*).
	Arg *Expr `msgpack:"a,omitempty"`
	// Distinct aggregates distinct non-NULL values only (COUNT(DISTINCT x), …).
	Distinct bool `msgpack:"d,omitempty"`
	// Type is the result type.
	Type Type `msgpack:"t"`
}

// AggResultType returns the result type of f over an argument of type arg, or an error.
func AggResultType(f AggFunc, arg Type, star bool) (Type, error) {
	switch {
	case f == AggCount:
		return TypeBigint, nil
	case star:
		return TypeNull, fmt.Errorf("%s(*) is not an aggregate; only count(*) is", f)
	case f == AggAvg && arg.Numeric():
		return TypeDouble, nil
	case f == AggSum && (arg.Numeric() || arg == TypeInterval):
		return arg, nil
	case (f == AggMin || f == AggMax) && arg.Valid():
		return arg, nil
	}
	return TypeNull, fmt.Errorf("%s does not apply to %s", f, arg)
}

// AggState is the running state of one aggregate of one group (and window). It is part
// of the operator's state tables, so its encoding is canonical: fixed field order, no
// maps, Distinct sorted.
type AggState struct {
	// N counts the values (rows, for COUNT(*)) added.
	N int64 `msgpack:"n"`
	// I and F are the running sum of a bigint or interval and of a double argument.
	I int64   `msgpack:"i"`
	F float64 `msgpack:"f"`
	// Best is the canonical encoding of the MIN or MAX value so far (nil before one).
	Best []byte `msgpack:"b"`
	// Distinct holds the canonical encodings of the distinct values seen, sorted, for a
	// DISTINCT aggregate.
	Distinct [][]byte `msgpack:"d"`
	// Overflow is set when merging two states (session windows) overflowed the bigint
	// sum: Result then fails, as Fold would have.
	Overflow bool `msgpack:"o,omitempty"`
}

// Merge returns the state of the union of the rows of a and b (session windows being
// merged). It may modify a, not b.
func (ag *Agg) Merge(a, b AggState) AggState {
	if ag.Distinct {
		for _, enc := range b.Distinct {
			if i, found := slices.BinarySearchFunc(a.Distinct, enc, bytes.Compare); !found {
				a.Distinct = slices.Insert(a.Distinct, i, enc)
			}
		}
		// The count, sum and extremes of the union of distinct values: fold them anew.
		plain := *ag
		plain.Distinct = false
		var n AggState
		for _, enc := range a.Distinct {
			v, err := DecodeValue(enc, ag.Arg.Type)
			if err == nil {
				err = plain.Fold(&n, v)
			}
			if err != nil {
				n.Overflow = true
			}
		}
		n.Distinct = a.Distinct
		n.Overflow = n.Overflow || a.Overflow || b.Overflow
		return n
	}
	a.N += b.N
	a.F += b.F
	a.Overflow = a.Overflow || b.Overflow
	if r, err := intArith(OpAdd, a.I, b.I); err != nil {
		a.Overflow = true
	} else {
		a.I = r.(int64)
	}
	if b.Best != nil {
		if a.Best == nil {
			a.Best = b.Best
		} else if x, err1 := DecodeValue(a.Best, ag.Arg.Type); err1 == nil {
			if y, err2 := DecodeValue(b.Best, ag.Arg.Type); err2 == nil {
				if c, _ := compareValues(y, x, ag.Arg.Type, ag.Arg.Type); (ag.Func == AggMin && c < 0) || (ag.Func == AggMax && c > 0) {
					a.Best = b.Best
				}
			}
		}
	}
	return a
}

// Value evaluates a's argument over an input row: the value Fold takes. For COUNT(*) it
// is true (the row counts).
func (a *Agg) Value(row []any) (any, error) {
	if a.Arg == nil {
		return true, nil
	}
	return a.Arg.Eval(row)
}

// Fold adds one row's value (Value) to st; NULL adds nothing.
func (a *Agg) Fold(st *AggState, v any) error {
	if v == nil {
		return nil
	}
	if a.Arg == nil {
		st.N++
		return nil
	}
	if a.Distinct {
		enc := EncodeValue(v)
		i, found := slices.BinarySearchFunc(st.Distinct, enc, bytes.Compare)
		if found {
			return nil
		}
		st.Distinct = slices.Insert(st.Distinct, i, enc)
	}
	st.N++
	switch a.Func {
	case AggSum, AggAvg:
		switch x := v.(type) {
		case int64:
			r, err := intArith(OpAdd, st.I, x)
			if err != nil {
				return fmt.Errorf("%s: %w", a.Func, err)
			}
			st.I = r.(int64)
		case float64:
			st.F += x
		}
	case AggMin, AggMax:
		if st.Best == nil {
			st.Best = EncodeValue(v)
			return nil
		}
		best, err := DecodeValue(st.Best, a.Arg.Type)
		if err != nil {
			return err
		}
		c, err := compareValues(v, best, a.Arg.Type, a.Arg.Type)
		if err != nil {
			return err
		}
		if (a.Func == AggMin && c < 0) || (a.Func == AggMax && c > 0) {
			st.Best = EncodeValue(v)
		}
	}
	return nil
}

// Result returns the aggregate's value for st.
func (a *Agg) Result(st *AggState) (any, error) {
	if st.Overflow {
		return nil, fmt.Errorf("%w: %s: bigint out of range", ErrEval, a.Func)
	}
	switch a.Func {
	case AggCount:
		return st.N, nil
	case AggSum:
		if st.N == 0 {
			return nil, nil
		}
		if a.Type == TypeDouble {
			return st.F, nil
		}
		return st.I, nil
	case AggAvg:
		if st.N == 0 {
			return nil, nil
		}
		if a.Arg.Type == TypeBigint {
			return float64(st.I) / float64(st.N), nil
		}
		return st.F / float64(st.N), nil
	case AggMin, AggMax:
		if st.Best == nil {
			return nil, nil
		}
		return DecodeValue(st.Best, a.Type)
	}
	return nil, fmt.Errorf("%w: aggregate %s", ErrBadPlan, a.Func)
}
