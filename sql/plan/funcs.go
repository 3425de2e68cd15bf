package plan

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Scalar functions: the names the planner resolves a call to, with their type rules.
// Every function is deterministic: none reads a clock or a locale.

type function struct {
	check func(args []Type) (Type, error)
	fn    func(args []any, types []Type) (any, error)
	nulls bool // called with NULL arguments; otherwise NULL in gives NULL out
}

// FunctionType returns the result type of the scalar function name over arguments of
// the given types, or an error saying what is wrong (ok false: no such function).
func FunctionType(name string, args []Type) (t Type, ok bool, err error) {
	f, ok := funcs[name]
	if !ok {
		return TypeNull, false, nil
	}
	t, err = f.check(args)
	return t, true, err
}

func sig(result Type, params ...Type) func([]Type) (Type, error) {
	return func(args []Type) (Type, error) {
		if len(args) != len(params) {
			return TypeNull, fmt.Errorf("takes %d arguments, not %d", len(params), len(args))
		}
		for i, p := range params {
			if args[i] != p && args[i] != TypeNull && !(p == TypeDouble && args[i] == TypeBigint) {
				return TypeNull, fmt.Errorf("argument %d is %s, not %s", i+1, args[i], p)
			}
		}
		return result, nil
	}
}

// sameNumeric: one numeric argument; the result has its type.
func sameNumeric(args []Type) (Type, error) {
	if len(args) != 1 || !(args[0].Numeric() || args[0] == TypeNull) {
		return TypeNull, fmt.Errorf("takes one bigint or double")
	}
	return args[0], nil
}

// funcs is the table of scalar functions, by the name the planner resolves a call to.
var funcs = buildFuncs()

func buildFuncs() map[string]function {
	text := func(f func(string) string) func([]any, []Type) (any, error) {
		return func(a []any, _ []Type) (any, error) { return f(a[0].(string)), nil }
	}
	substr := func(a []any, _ []Type) (any, error) {
		r := []rune(a[0].(string))
		from := a[1].(int64) - 1 // SQL is 1-based; characters before 1 count toward the length
		end := int64(len(r))
		if len(a) == 3 {
			n := a[2].(int64)
			if n < 0 {
				return nil, fmt.Errorf("%w: negative substring length", ErrEval)
			}
			end = min(end, from+n)
		}
		from = max(from, 0)
		if from >= end {
			return "", nil
		}
		return string(r[from:end]), nil
	}
	float := func(f func(float64) float64) func([]any, []Type) (any, error) {
		return func(a []any, _ []Type) (any, error) {
			if i, ok := a[0].(int64); ok {
				return i, nil
			}
			return f(a[0].(float64)), nil
		}
	}
	return map[string]function{
		"lower":        {check: sig(TypeText, TypeText), fn: text(strings.ToLower)},
		"upper":        {check: sig(TypeText, TypeText), fn: text(strings.ToUpper)},
		"btrim":        {check: sig(TypeText, TypeText), fn: text(func(s string) string { return strings.Trim(s, " ") })},
		"ltrim":        {check: sig(TypeText, TypeText), fn: text(func(s string) string { return strings.TrimLeft(s, " ") })},
		"rtrim":        {check: sig(TypeText, TypeText), fn: text(func(s string) string { return strings.TrimRight(s, " ") })},
		"reverse":      {check: sig(TypeText, TypeText), fn: text(reverse)},
		"length":       {check: sig(TypeBigint, TypeText), fn: func(a []any, _ []Type) (any, error) { return int64(len([]rune(a[0].(string)))), nil }},
		"octet_length": {check: sig(TypeBigint, TypeBytea), fn: func(a []any, _ []Type) (any, error) { return int64(len(a[0].([]byte))), nil }},
		"substr2":      {check: sig(TypeText, TypeText, TypeBigint), fn: substr},
		"substr3":      {check: sig(TypeText, TypeText, TypeBigint, TypeBigint), fn: substr},
		"replace": {check: sig(TypeText, TypeText, TypeText, TypeText), fn: func(a []any, _ []Type) (any, error) {
			return strings.ReplaceAll(a[0].(string), a[1].(string), a[2].(string)), nil
		}},
		"strpos": {check: sig(TypeBigint, TypeText, TypeText), fn: func(a []any, _ []Type) (any, error) {
			i := strings.Index(a[0].(string), a[1].(string))
			if i < 0 {
				return int64(0), nil
			}
			return int64(len([]rune(a[0].(string)[:i]))) + 1, nil
		}},
		"abs": {check: sameNumeric, fn: func(a []any, _ []Type) (any, error) {
			if i, ok := a[0].(int64); ok {
				if i == math.MinInt64 {
					return nil, fmt.Errorf("%w: bigint out of range", ErrEval)
				}
				return max(i, -i), nil
			}
			return math.Abs(a[0].(float64)), nil
		}},
		"floor": {check: sameNumeric, fn: float(math.Floor)},
		"ceil":  {check: sameNumeric, fn: float(math.Ceil)},
		// round of a double rounds half to even, as PostgreSQL's round(double precision).
		"round": {check: sameNumeric, fn: float(math.RoundToEven)},
		"date_trunc": {check: sig(TypeTimestamp, TypeText, TypeTimestamp), fn: func(a []any, _ []Type) (any, error) {
			return dateTrunc(a[0].(string), a[1].(int64))
		}},
		"date_bin": {check: sig(TypeTimestamp, TypeInterval, TypeTimestamp, TypeTimestamp), fn: func(a []any, _ []Type) (any, error) {
			stride, t, origin := a[0].(int64), a[1].(int64), a[2].(int64)
			if stride <= 0 {
				return nil, fmt.Errorf("%w: date_bin stride must be positive", ErrEval)
			}
			return origin + floorDiv(t-origin, stride)*stride, nil
		}},
		"to_timestamp_ms": {check: sig(TypeTimestamp, TypeBigint), fn: func(a []any, _ []Type) (any, error) { return a[0], nil }},
		"epoch_ms":        {check: sig(TypeBigint, TypeTimestamp), fn: func(a []any, _ []Type) (any, error) { return a[0], nil }},
		"nullif": {nulls: true, check: func(args []Type) (Type, error) {
			if len(args) != 2 {
				return TypeNull, fmt.Errorf("takes 2 arguments")
			}
			if _, err := BinaryType(OpEq, args[0], args[1]); err != nil {
				return TypeNull, err
			}
			return args[0], nil
		}, fn: func(a []any, t []Type) (any, error) {
			if a[0] == nil || a[1] == nil {
				return a[0], nil
			}
			if c, err := compareValues(a[0], a[1], t[0], t[1]); err == nil && c == 0 {
				return nil, nil
			}
			return a[0], nil
		}},
	}
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// dateTrunc truncates a timestamp (Unix ms, UTC) to a unit, as PostgreSQL's date_trunc
// on a timestamp without time zone.
func dateTrunc(unit string, ms int64) (any, error) {
	t := time.UnixMilli(ms).UTC()
	var r time.Time
	switch strings.ToLower(unit) {
	case "millisecond", "milliseconds":
		return ms, nil
	case "second", "seconds":
		r = t.Truncate(time.Second)
	case "minute", "minutes":
		r = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), 0, 0, time.UTC)
	case "hour", "hours":
		r = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, time.UTC)
	case "day", "days":
		r = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	case "month", "months":
		r = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	case "year", "years":
		r = time.Date(t.Year(), 1, 1, 0, 0, 0, 0, time.UTC)
	default:
		return nil, fmt.Errorf("%w: date_trunc unit %q", ErrEval, unit)
	}
	if r.After(t) { // Truncate on times before 1970 rounds toward zero
		r = r.Add(-time.Second)
	}
	return r.UnixMilli(), nil
}

// CastType reports whether a value of type from can be cast to type to.
func CastType(from, to Type) bool {
	if from == to || from == TypeNull {
		return true
	}
	switch to {
	case TypeText:
		// Timestamps and intervals have no text form here yet (PostgreSQL's depends on
		// settings such as DateStyle).
		return from == TypeBigint || from == TypeDouble || from == TypeBoolean
	case TypeBigint, TypeDouble:
		return from.Numeric() || from == TypeText || from == TypeBoolean && to == TypeBigint
	case TypeBoolean:
		return from == TypeText || from == TypeBigint
	case TypeTimestamp, TypeInterval:
		return from == TypeText
	}
	return false
}

// Cast converts a value to type t as CAST does.
func Cast(v any, t Type) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch t {
	case TypeBigint:
		switch x := v.(type) {
		case int64:
			return x, nil
		case float64:
			r := math.RoundToEven(x)
			if math.IsNaN(r) || r < -9.223372036854775808e18 || r >= 9.223372036854775808e18 {
				return nil, fmt.Errorf("%w: bigint out of range", ErrEval)
			}
			return int64(r), nil
		case bool:
			if x {
				return int64(1), nil
			}
			return int64(0), nil
		case string:
			i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: invalid input for bigint: %q", ErrEval, x)
			}
			return i, nil
		}
	case TypeDouble:
		switch x := v.(type) {
		case int64:
			return float64(x), nil
		case float64:
			return x, nil
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil {
				return nil, fmt.Errorf("%w: invalid input for double: %q", ErrEval, x)
			}
			return f, nil
		}
	case TypeText:
		switch x := v.(type) {
		case string:
			return x, nil
		case int64:
			return strconv.FormatInt(x, 10), nil
		case float64:
			return FormatDouble(x), nil
		case bool:
			return strconv.FormatBool(x), nil
		}
	case TypeBoolean:
		switch x := v.(type) {
		case bool:
			return x, nil
		case int64:
			return x != 0, nil
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "t", "true", "yes", "on", "1":
				return true, nil
			case "f", "false", "no", "off", "0":
				return false, nil
			}
			return nil, fmt.Errorf("%w: invalid input for boolean: %q", ErrEval, x)
		}
	case TypeTimestamp:
		if s, ok := v.(string); ok {
			ms, err := ParseTimestamp(s)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrEval, err)
			}
			return ms, nil
		}
		if i, ok := v.(int64); ok {
			return i, nil
		}
	case TypeInterval:
		if s, ok := v.(string); ok {
			ms, err := ParseInterval(s)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrEval, err)
			}
			return ms, nil
		}
		if i, ok := v.(int64); ok {
			return i, nil
		}
	case TypeBytea:
		if b, ok := v.([]byte); ok {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%w: cannot cast %T to %s", ErrEval, v, t)
}

// FormatDouble renders a double as PostgreSQL's float8 output does (shortest exact).
func FormatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// ParseInterval parses an interval literal: one or more "N unit" pairs (units
// millisecond(s)/ms, second(s)/s, minute(s)/min, hour(s)/h, day(s)/d, week(s)), or
// hh:mm:ss. The result is in milliseconds.
func ParseInterval(s string) (int64, error) {
	f := strings.Fields(strings.ToLower(s))
	if len(f) == 1 && strings.Count(f[0], ":") == 2 {
		var h, m, sec int64
		if _, err := fmt.Sscanf(f[0], "%d:%d:%d", &h, &m, &sec); err == nil {
			return ((h*60+m)*60 + sec) * 1000, nil
		}
	}
	if len(f) == 0 || len(f)%2 != 0 {
		return 0, fmt.Errorf("interval %q: want pairs of number and unit, such as '5 seconds'", s)
	}
	var total float64
	for i := 0; i < len(f); i += 2 {
		n, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return 0, fmt.Errorf("interval %q: %q is not a number", s, f[i])
		}
		var unit float64
		switch strings.TrimSuffix(f[i+1], "s") {
		case "millisecond", "m", "msec":
			unit = 1
		case "second", "", "sec":
			unit = 1000
		case "minute", "min":
			unit = 60_000
		case "hour", "h":
			unit = 3_600_000
		case "day", "d":
			unit = 86_400_000
		case "week":
			unit = 7 * 86_400_000
		default:
			return 0, fmt.Errorf("interval %q: unknown unit %q", s, f[i+1])
		}
		if f[i+1] == "ms" {
			unit = 1
		}
		total += n * unit
	}
	if math.Abs(total) > 1<<53 || total != math.Trunc(total) {
		return 0, fmt.Errorf("interval %q: not a whole number of milliseconds in range", s)
	}
	return int64(total), nil
}

// ParseTimestamp parses a timestamp literal, UTC: "2006-01-02 15:04:05[.fff]",
// "2006-01-02T15:04:05[.fff]Z" or "2006-01-02". The result is Unix milliseconds.
func ParseTimestamp(s string) (int64, error) {
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02"} {
		if t, err := time.Parse(layout, strings.TrimSpace(s)); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("timestamp %q: want 'YYYY-MM-DD hh:mm:ss[.fff]' (UTC)", s)
}
