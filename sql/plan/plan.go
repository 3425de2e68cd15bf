package plan

import (
	"bytes"
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/window"
	"github.com/vmihailenco/msgpack/v5"
)

// Version is the newest plan format this binary writes and runs; it runs every version
// from VersionMin on. A plan carries its version; Decode refuses any other, so a replica
// never runs a plan it might read differently. Raise it, and keep decoding the old one,
// for any change to the format or to what a plan means (and gate its use on the cluster
// version: DESIGN.md section 10).
//
//	1  the first format
//	2  adds Schema.Layout (LayoutMap records) and stream–stream joins (View.Pair); a
//	   plan that uses nothing new is still written as version 1 (MinVersion), byte for
//	   byte as before
//	3  adds views over views (View.From, PairJoin.RightFrom), aggregates over
//	   stream–stream joins, and join bounds by a column (PairJoin.LeftUntil,
//	   RightUntil); a plan using none is written as version 1 or 2, as before
//	4  adds LEFT, RIGHT and FULL OUTER joins of two streams
//	5  adds Window.Panes: a HOP view's state kept per slide-wide pane (PanesFit)
//	6  adds PairJoin.SideTables: a stream–stream join keeps its right side's rows in a
//	   table of their own (n.rpairs)
const Version = 6

// VersionMin is the oldest plan format this binary runs.
const VersionMin = 1

// MinVersion returns the oldest format that can carry p: what the compiler writes, so
// that a plan using no new construct still runs on binaries that know only version 1.
func (p *Plan) MinVersion() int {
	uses := func(s *Schema) bool { return s.Layout != LayoutArray }
	for i := range p.Views {
		if j := p.Views[i].Pair; j != nil && j.SideTables {
			return 6
		}
	}
	for i := range p.Views {
		if w := p.Views[i].Window; w != nil && w.Panes {
			return 5
		}
	}
	for i := range p.Views {
		if j := p.Views[i].Pair; j != nil && j.outer() {
			return 4
		}
	}
	for i := range p.Views {
		if p.Views[i].usesVersion3() {
			return 3
		}
	}
	for i := range p.Relations {
		if uses(&p.Relations[i]) {
			return 2
		}
	}
	for i := range p.Views {
		v := &p.Views[i]
		if v.Pair != nil || uses(&v.Input) || (v.Join != nil && uses(&v.Join.Table)) {
			return 2
		}
	}
	return 1
}

// Plan is a compiled SQL deployment: the relations it defines and the views it
// maintains. It is self-contained: each view embeds the schema of the relation it reads,
// so a replica needs nothing but the plan to run it.
type Plan struct {
	// Version is the plan format version (Version).
	Version int `msgpack:"version"`
	// Relations are the streams and tables the deployment creates, in statement order.
	Relations []Schema `msgpack:"relations"`
	// Views are the materialized views, in statement order.
	Views []View `msgpack:"views"`
}

// Emit says when a view emits a window's result.
type Emit uint8

// The emit modes.
const (
	// EmitChanges emits every revision: for a windowed view, when the watermark passes
	// the window's end and again for each row the window takes after that (within the
	// allowed lateness); for an unwindowed aggregate, for every row.
	EmitChanges Emit = iota + 1
	// EmitOnClose emits a window's result once, when the watermark passes its end plus
	// the allowed lateness, and never changes it.
	EmitOnClose
)

// WindowKind is the table function a view's rows are windowed by.
type WindowKind uint8

// The window kinds.
const (
	WindowTumble  WindowKind = iota + 1 // TUMBLE(s, ts, size)
	WindowHop                           // HOP(s, ts, slide, size)
	WindowSession                       // SESSION(s, ts, gap): SizeMs is the gap
)

// Window is a view's window table function.
type Window struct {
	Kind WindowKind `msgpack:"k"`
	// SizeMs and SlideMs are the window size and (for HOP) the slide, in milliseconds.
	SizeMs  int64 `msgpack:"size"`
	SlideMs int64 `msgpack:"slide,omitempty"`
	// Panes keeps a HOP view's window state per slide-wide pane (window.Config.Panes):
	// each row updates one pane instead of size/slide windows. Only where PanesFit.
	Panes bool `msgpack:"panes,omitempty"`
}

// PanesFit reports whether view v may keep its window state in panes: a HOP without
// allowed lateness whose aggregates merge to exactly what folding the rows gives, in any
// order (COUNT, MIN, MAX, and SUM and AVG of integers and intervals: a double's sum
// depends on the order of its terms).
func (v *View) PanesFit() bool {
	if v.Window == nil || v.Window.Kind != WindowHop || v.AllowedLatenessMs != 0 || v.Pair != nil {
		return false
	}
	for i := range v.Aggs {
		a := &v.Aggs[i]
		switch a.Func {
		case AggCount, AggMin, AggMax:
		case AggSum, AggAvg:
			if a.Arg == nil || a.Arg.Type == TypeDouble {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// Assigner returns the window package's assigner for w.
func (w *Window) Assigner() window.Assigner {
	switch w.Kind {
	case WindowHop:
		return window.Hopping{Size: w.SizeMs, Slide: w.SlideMs}
	case WindowSession:
		return window.Session{Gap: w.SizeMs}
	}
	return window.Tumbling{Size: w.SizeMs}
}

// View is one materialized view: a SELECT over one stream, maintained by processors.
//
// Its rows are computed in two stages. The input stage runs over the input's rows
// (columns of Input): Where filters them; an unaggregated view (no Aggs, no GroupBy)
// then computes Output over the row itself. An aggregated view computes GroupBy, the
// group's key, and folds each Agg over the group's rows (per window, with Window); its
// Output expressions then run over the group row: the GroupBy values, then the Agg
// results, then window_start and window_end (with Window).
type View struct {
	// Name names the view: its changelog stream and its table.
	Name string `msgpack:"name"`
	// SQL is the statement's text, for SHOW and EXPLAIN.
	SQL string `msgpack:"sql"`
	// Input is the schema of the stream (or, with From, the view) the view reads.
	Input Schema `msgpack:"input"`
	// From, if set, says how the view reads Input, a view's changelog (plan version 3;
	// viewinput.go): its final rows as a stream, or its changing rows with retractions.
	From *ViewInput `msgpack:"from,omitempty"`
	// Join, if set, joins each input row with the row of a table whose key equals one of
	// its columns: the input row is then the stream's columns followed by the table's
	// (NULL for a LEFT join that finds none). Only unaggregated views join.
	Join *Join `msgpack:"join,omitempty"`
	// Pair, if set, joins the input stream with another stream (PairJoin, plan version
	// 2): the input row is then the pair row. Such a view may GROUP BY (without
	// aggregates), which keeps one row per group: a distinct set of the pairs' values.
	Pair *PairJoin `msgpack:"pair,omitempty"`
	// Where filters input rows; nil keeps all.
	Where *Expr `msgpack:"where,omitempty"`
	// GroupBy are the grouping expressions over input rows (window bounds excluded).
	GroupBy []*Expr `msgpack:"group,omitempty"`
	// Aggs are the aggregates.
	Aggs []Agg `msgpack:"aggs,omitempty"`
	// Window windows the rows by their event time; nil for none.
	Window *Window `msgpack:"window,omitempty"`
	// Having filters group rows (over the group row); nil keeps all.
	Having *Expr `msgpack:"having,omitempty"`
	// Output computes the view's columns (Schema.Columns, in order).
	Output []*Expr `msgpack:"output"`
	// Schema is the view's output schema (KindView).
	Schema Schema `msgpack:"schema"`
	// Emit is when results are emitted (EmitChanges or EmitOnClose).
	Emit Emit `msgpack:"emit"`
	// AllowedLatenessMs is how long past a window's end, in watermark time, the window
	// still takes rows.
	AllowedLatenessMs int64 `msgpack:"lateness"`
}

// Join is a stream–table lookup join.
type Join struct {
	// Table is the schema of the table looked up (KindTable).
	Table Schema `msgpack:"table"`
	// Column is the input stream's column whose value is looked up as the table's key.
	Column int `msgpack:"col"`
	// Left keeps stream rows that find no table row (with NULL table columns).
	Left bool `msgpack:"left,omitempty"`
}

// InputTypes returns the column types of the view's input row: the input's columns,
// then the joined table's.
func (v *View) InputTypes() []Type {
	var ts []Type
	for _, c := range v.Input.Columns {
		ts = append(ts, c.Type)
	}
	if v.Join != nil {
		for _, c := range v.Join.Table.Columns {
			ts = append(ts, c.Type)
		}
	}
	if j := v.Pair; j != nil {
		return append(sideTypes(&v.Input, j.LeftWindow), sideTypes(&j.Right, j.RightWindow)...)
	}
	return ts
}

// Aggregated reports whether the view groups rows.
func (v *View) Aggregated() bool { return len(v.Aggs) > 0 || len(v.GroupBy) > 0 || v.Window != nil }

// GroupRowTypes returns the column types of the view's group row: the GroupBy values,
// the Agg results, then window_start and window_end with a Window.
func (v *View) GroupRowTypes() []Type {
	var ts []Type
	for _, g := range v.GroupBy {
		ts = append(ts, g.Type)
	}
	for _, a := range v.Aggs {
		ts = append(ts, a.Type)
	}
	if v.Window != nil {
		ts = append(ts, TypeTimestamp, TypeTimestamp)
	}
	return ts
}

// Encode returns the plan's msgpack encoding.
func (p *Plan) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("%w: encode: %w", ErrBadPlan, err)
	}
	return buf.Bytes(), nil
}

// Decode decodes and validates an encoded plan. It refuses another format version
// (ErrVersion) and a plan that does not validate (ErrBadPlan).
func Decode(b []byte) (*Plan, error) {
	var head struct {
		Version int `msgpack:"version"`
	}
	if err := msgpack.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPlan, err)
	}
	if head.Version < VersionMin || head.Version > Version {
		return nil, fmt.Errorf("%w: %d (this binary runs %d to %d)", ErrVersion, head.Version, VersionMin, Version)
	}
	p := new(Plan)
	dec := msgpack.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields(true)
	if err := dec.Decode(p); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPlan, err)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// Validate checks the plan as a replica must before running it: the version, every
// schema, every expression's operands and types, and the window and emit settings. It
// also prepares the expressions for Eval, so call it (or Decode) before Register.
func (p *Plan) Validate() error {
	if p.Version < VersionMin || p.Version > Version {
		return fmt.Errorf("%w: %d (this binary runs %d to %d)", ErrVersion, p.Version, VersionMin, Version)
	}
	if need := p.MinVersion(); p.Version < need {
		return fmt.Errorf("%w: version %d plan uses constructs of version %d", ErrBadPlan, p.Version, need)
	}
	names := map[string]bool{}
	for i := range p.Relations {
		s := &p.Relations[i]
		if err := s.Validate(); err != nil {
			return err
		}
		if s.Kind == KindView || names[s.Name] {
			return fmt.Errorf("%w: relation %s", ErrBadPlan, s.Name)
		}
		names[s.Name] = true
	}
	for i := range p.Views {
		v := &p.Views[i]
		if names[v.Name] {
			return fmt.Errorf("%w: view %s defined twice", ErrBadPlan, v.Name)
		}
		names[v.Name] = true
		if err := v.validate(); err != nil {
			return fmt.Errorf("view %s: %w", v.Name, err)
		}
	}
	return nil
}

func (v *View) validate() error {
	if err := v.Input.Validate(); err != nil {
		return err
	}
	if err := v.Schema.Validate(); err != nil {
		return err
	}
	if err := validateFrom(&v.Input, v.From); err != nil {
		return err
	}
	if err := v.validateUpdating(); err != nil {
		return err
	}
	if v.Schema.Name != v.Name || v.Schema.Kind != KindView || (v.Input.Kind == KindTable && v.Aggregated()) {
		return fmt.Errorf("%w: view schema %s (%s) over %s (%s)", ErrBadPlan, v.Schema.Name, v.Schema.Kind, v.Input.Name, v.Input.Kind)
	}
	if j := v.Join; j != nil {
		if err := j.Table.Validate(); err != nil {
			return err
		}
		switch {
		case j.Table.Kind != KindTable || v.Input.Kind != KindStream || v.Aggregated():
			return fmt.Errorf("%w: join of %s %s with %s %s", ErrBadPlan, v.Input.Kind, v.Input.Name, j.Table.Kind, j.Table.Name)
		case j.Column < 0 || j.Column >= len(v.Input.Columns) || v.Input.Columns[j.Column].Type != j.Table.Columns[j.Table.Key].Type:
			return fmt.Errorf("%w: join column %d", ErrBadPlan, j.Column)
		}
	}
	if v.Pair != nil {
		if err := v.validatePair(); err != nil {
			return err
		}
	}
	in := v.InputTypes()
	if v.Where != nil {
		if err := v.Where.prepare(in); err != nil {
			return err
		}
		if v.Where.Type != TypeBoolean && v.Where.Type != TypeNull {
			return fmt.Errorf("%w: WHERE is %s", ErrBadPlan, v.Where.Type)
		}
	}
	out := in
	if v.Aggregated() {
		for _, g := range v.GroupBy {
			if err := g.prepare(in); err != nil {
				return err
			}
		}
		for i := range v.Aggs {
			a := &v.Aggs[i]
			if a.Arg != nil {
				if err := a.Arg.prepare(in); err != nil {
					return err
				}
			}
			argType := TypeNull
			if a.Arg != nil {
				argType = a.Arg.Type
			}
			if t, err := AggResultType(a.Func, argType, a.Arg == nil); err != nil || t != a.Type {
				return fmt.Errorf("%w: aggregate %d: %s of %s is %s", ErrBadPlan, i, a.Func, argType, a.Type)
			}
		}
		out = v.GroupRowTypes()
		if v.Having != nil {
			if err := v.Having.prepare(out); err != nil {
				return err
			}
		}
	} else if v.Having != nil {
		return fmt.Errorf("%w: HAVING without grouping", ErrBadPlan)
	}
	if len(v.Output) != len(v.Schema.Columns) {
		return fmt.Errorf("%w: %d output expressions for %d columns", ErrBadPlan, len(v.Output), len(v.Schema.Columns))
	}
	for i, e := range v.Output {
		if err := e.prepare(out); err != nil {
			return err
		}
		if e.Type != v.Schema.Columns[i].Type {
			return fmt.Errorf("%w: output %d is %s, column %s is %s", ErrBadPlan, i, e.Type, v.Schema.Columns[i].Name, v.Schema.Columns[i].Type)
		}
	}
	if v.Emit != EmitChanges && v.Emit != EmitOnClose {
		return fmt.Errorf("%w: emit mode %d", ErrBadPlan, v.Emit)
	}
	if v.Emit == EmitOnClose && v.Window == nil {
		return fmt.Errorf("%w: EMIT ON WINDOW CLOSE without a window", ErrBadPlan)
	}
	if v.Window != nil {
		if v.Input.EventTime < 0 {
			return fmt.Errorf("%w: a window over %s, which has no event-time column", ErrBadPlan, v.Input.Name)
		}
		if _, err := window.New(window.Config[int, int]{Name: v.Name, Assigner: v.Window.Assigner(), AllowedLateness: v.AllowedLatenessMs,
			Exchange: v.Name, Init: func() int { return 0 }, Add: func(int, int) int { return 0 }, Merge: func(int, int) int { return 0 },
			Emit: func(*partition.Tx, window.Result[int]) error { return nil }}); err != nil {
			return fmt.Errorf("%w: %w", ErrBadPlan, err)
		}
		if v.Window.Kind < WindowTumble || v.Window.Kind > WindowSession {
			return fmt.Errorf("%w: window kind %d", ErrBadPlan, v.Window.Kind)
		}
		if v.Window.Kind == WindowHop && v.Window.SizeMs%v.Window.SlideMs != 0 {
			return fmt.Errorf("%w: HOP size %d ms is not a multiple of its slide %d ms", ErrBadPlan, v.Window.SizeMs, v.Window.SlideMs)
		}
		if v.Window.Panes && !v.PanesFit() {
			return fmt.Errorf("%w: view %s: panes need a HOP without allowed lateness and exact aggregates", ErrBadPlan, v.Name)
		}
	} else if v.AllowedLatenessMs != 0 {
		return fmt.Errorf("%w: allowed lateness without a window", ErrBadPlan)
	}
	return nil
}

// Schemas returns the schemas the plan defines: its relations, then its views'.
func (p *Plan) Schemas() []Schema {
	out := append([]Schema(nil), p.Relations...)
	for i := range p.Views {
		s := p.Views[i].Schema
		s.Offer = p.Views[i].Offer()
		out = append(out, s)
	}
	return out
}
