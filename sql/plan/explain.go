package plan

import (
	"fmt"
	"strings"
)

// String renders the expression as SQL over column names c0, c1, … (the input row's
// columns by index).
func (e *Expr) String() string { return e.format(nil) }

// format renders the expression with names for the columns (nil: c0, c1, …).
func (e *Expr) format(names []string) string {
	if e == nil {
		return "NULL"
	}
	arg := func(i int) string { return e.Args[i].format(names) }
	switch e.Op {
	case OpCol:
		if e.Col < len(names) {
			return names[e.Col]
		}
		return fmt.Sprintf("c%d", e.Col)
	case OpConst:
		v, _ := DecodeValue(e.Val, e.Type)
		switch x := v.(type) {
		case nil:
			return "NULL"
		case string:
			return "'" + strings.ReplaceAll(x, "'", "''") + "'"
		case int64:
			if e.Type == TypeInterval {
				return fmt.Sprintf("INTERVAL '%d ms'", x)
			}
			if e.Type == TypeTimestamp {
				return fmt.Sprintf("to_timestamp_ms(%d)", x)
			}
		}
		return fmt.Sprint(v)
	case OpNeg:
		return "-" + arg(0)
	case OpNot:
		return "NOT " + arg(0)
	case OpIsNull:
		return arg(0) + " IS NULL"
	case OpIsNotNull:
		return arg(0) + " IS NOT NULL"
	case OpCast:
		return "CAST(" + arg(0) + " AS " + e.Type.String() + ")"
	case OpCase:
		var b strings.Builder
		b.WriteString("CASE")
		for i := 0; i+1 < len(e.Args); i += 2 {
			b.WriteString(" WHEN " + arg(i) + " THEN " + arg(i+1))
		}
		return b.String() + " ELSE " + arg(len(e.Args)-1) + " END"
	case OpCoalesce, OpCall:
		name := "coalesce"
		if e.Op == OpCall {
			name = strings.TrimRight(e.Name, "23")
		}
		parts := make([]string, len(e.Args))
		for i := range e.Args {
			parts[i] = arg(i)
		}
		return name + "(" + strings.Join(parts, ", ") + ")"
	case OpIn:
		parts := make([]string, len(e.Args)-1)
		for i := range parts {
			parts[i] = arg(i + 1)
		}
		return arg(0) + " IN (" + strings.Join(parts, ", ") + ")"
	}
	return "(" + arg(0) + " " + opNames[e.Op] + " " + arg(1) + ")"
}

// Explain describes the plan: for each view its processors, what each reads and
// writes, and how rows are partitioned — what EXPLAIN shows.
func (p *Plan) Explain() string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan version %d\n", p.Version)
	for _, s := range p.Relations {
		fmt.Fprintf(&b, "%s %s (%s) key %s", s.Kind, s.Name, columnList(s.Columns), s.Columns[s.Key].Name)
		if s.EventTime >= 0 {
			fmt.Fprintf(&b, ", event time %s, out of order %d ms, idle %d ms", s.Columns[s.EventTime].Name, s.OutOfOrdernessMs, s.IdleTimeoutMs)
		}
		b.WriteString("\n")
		if s.Kind == KindTable {
			fmt.Fprintf(&b, "  %s: stream %s (compacted) → table %s, by key\n", s.Name+SuffixMaterialize, s.Name, s.Name)
		}
	}
	for i := range p.Views {
		p.Views[i].explain(&b)
	}
	return b.String()
}

func columnList(cols []Column) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c.Name + " " + c.Type.String()
	}
	return strings.Join(parts, ", ")
}

func (v *View) explain(b *strings.Builder) {
	var in []string
	for _, c := range v.Input.Columns {
		in = append(in, c.Name)
	}
	if v.Join != nil {
		for _, c := range v.Join.Table.Columns {
			in = append(in, v.Join.Table.Name+"."+c.Name)
		}
	}
	if j := v.Pair; j != nil {
		in = nil
		for _, side := range []struct {
			s *Schema
			w *Window
		}{{&v.Input, j.LeftWindow}, {&j.Right, j.RightWindow}} {
			for _, c := range side.s.Columns {
				in = append(in, side.s.Name+"."+c.Name)
			}
			if side.w != nil {
				in = append(in, side.s.Name+".window_start", side.s.Name+".window_end")
			}
		}
	}
	fmt.Fprintf(b, "view %s (%s)\n", v.Name, columnList(v.Schema.Columns))
	where := ""
	if v.Where != nil {
		where = ", WHERE " + v.Where.format(in)
	}
	outs := func(env []string) string {
		parts := make([]string, len(v.Output))
		for i, e := range v.Output {
			parts[i] = e.format(env) + " AS " + v.Schema.Columns[i].Name
		}
		return strings.Join(parts, ", ")
	}
	switch {
	case v.Pair != nil:
		v.explainPair(b, in, where, outs)
	case v.Join != nil:
		kind := "JOIN"
		if v.Join.Left {
			kind = "LEFT JOIN"
		}
		fmt.Fprintf(b, "  %s: stream %s → stream %s, repartitioned by %s\n", v.Name+SuffixByKey, v.Input.Name, v.Name+SuffixByKey, in[v.Join.Column])
		fmt.Fprintf(b, "  %s: %s table %s on its key%s, SELECT %s → table %s, changelog %s\n",
			v.Name+SuffixJoin, kind, v.Join.Table.Name, where, outs(in), v.Name, v.Name)
	case !v.Aggregated():
		fmt.Fprintf(b, "  %s: stream %s%s, SELECT %s → table %s, changelog %s, on the input's partition\n",
			v.Name+SuffixProject, v.Input.Name, where, outs(in), v.Name, v.Name)
	default:
		var group, env []string
		for _, g := range v.GroupBy {
			group = append(group, g.format(in))
		}
		env = append(env, group...)
		for _, a := range v.Aggs {
			arg := "*"
			if a.Arg != nil {
				arg = a.Arg.format(in)
				if a.Distinct {
					arg = "DISTINCT " + arg
				}
			}
			env = append(env, a.Func.String()+"("+arg+")")
		}
		fmt.Fprintf(b, "  %s: stream %s%s → stream %s, repartitioned by (%s)", v.Name+SuffixByKey, v.Input.Name, where, v.Name+SuffixByKey, strings.Join(group, ", "))
		switch {
		case v.From != nil && v.From.Updating:
			fmt.Fprintf(b, ", retracting each key's previous row (table %s)", v.Name+SuffixPrev)
		case v.Window != nil:
			b.WriteString(", watermark: " + watermarkText(&v.Input, v.From))
		}
		b.WriteString("\n")
		emit := "EMIT CHANGES"
		if v.Emit == EmitOnClose {
			emit = "EMIT ON WINDOW CLOSE"
		}
		having := ""
		if v.Having != nil {
			having = ", HAVING " + v.Having.format(append(env, "window_start", "window_end"))
		}
		if v.Window == nil {
			fmt.Fprintf(b, "  %s: running aggregate per group (table %s)%s, SELECT %s → table %s, changelog %s, %s\n",
				v.Name+SuffixGroup, v.Name+SuffixState, having, outs(env), v.Name, v.Name, emit)
			return
		}
		env = append(env, "window_start", "window_end")
		var win string
		switch v.Window.Kind {
		case WindowTumble:
			win = fmt.Sprintf("TUMBLE %d ms", v.Window.SizeMs)
		case WindowHop:
			win = fmt.Sprintf("HOP slide %d ms size %d ms", v.Window.SlideMs, v.Window.SizeMs)
			if v.Window.Panes {
				win += ", panes"
			}
		case WindowSession:
			win = fmt.Sprintf("SESSION gap %d ms", v.Window.SizeMs)
		}
		fmt.Fprintf(b, "  %s: %s, allowed lateness %d ms (operator %s)%s, SELECT %s → table %s, changelog %s, late rows → %s, %s\n",
			v.Name+SuffixWindow, win, v.AllowedLatenessMs, v.Name+SuffixOperator, having, outs(env), v.Name, v.Name, v.Name+SuffixLate, emit)
	}
}

// watermarkText describes the watermark a router publishes for rows of s.
func watermarkText(s *Schema, from *ViewInput) string {
	if from != nil {
		return fmt.Sprintf("operator %s's − %d ms (final rows of view %s)", s.Name+SuffixOperator, from.LagMs, s.Name)
	}
	return fmt.Sprintf("event time − %d ms, idle after %d ms", s.OutOfOrdernessMs, s.IdleTimeoutMs)
}
