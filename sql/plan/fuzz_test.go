package plan

import (
	"bytes"
	"testing"
)

// seedPlan is a valid plan: a stream and a windowed view with an expression of each
// family, built by hand (this package has no parser).
func seedPlan() *Plan {
	in := Schema{Name: "s", Kind: KindStream, Columns: []Column{{"k", TypeText}, {"n", TypeBigint}, {"ts", TypeTimestamp}},
		Key: 0, EventTime: 2, OutOfOrdernessMs: 1000, IdleTimeoutMs: 2000}
	where := &Expr{Op: OpGt, Type: TypeBoolean, Args: []*Expr{ColumnRef(1, TypeBigint), Const(int64(0), TypeBigint)}}
	group := &Expr{Op: OpCall, Type: TypeText, Name: "lower", Args: []*Expr{ColumnRef(0, TypeText)}}
	v := View{Name: "v", SQL: "…", Input: in, Where: where, GroupBy: []*Expr{group},
		Aggs:   []Agg{{Func: AggCount, Type: TypeBigint}, {Func: AggSum, Arg: ColumnRef(1, TypeBigint), Type: TypeBigint}},
		Window: &Window{Kind: WindowHop, SizeMs: 3000, SlideMs: 1000},
		Output: []*Expr{ColumnRef(0, TypeText), ColumnRef(1, TypeBigint), ColumnRef(3, TypeTimestamp),
			{Op: OpCase, Type: TypeText, Args: []*Expr{
				{Op: OpGt, Type: TypeBoolean, Args: []*Expr{ColumnRef(2, TypeBigint), Const(int64(10), TypeBigint)}},
				Const("big", TypeText), Const(nil, TypeNull)}}},
		Schema: Schema{Name: "v", Kind: KindView, Key: -1, EventTime: -1, Columns: []Column{{"g", TypeText}, {"c", TypeBigint}, {"ws", TypeTimestamp}, {"size", TypeText}}},
		Emit:   EmitChanges, AllowedLatenessMs: 500}
	return &Plan{Version: Version, Relations: []Schema{in}, Views: []View{v}}
}

// seedPairPlan is a valid version 2 plan: two streams, one of map layout, and a
// same-window stream–stream join grouped to a distinct set.
func seedPairPlan() *Plan {
	a := Schema{Name: "a", Kind: KindStream, Columns: []Column{{"k", TypeText}, {"ts", TypeTimestamp}}, Key: 0, EventTime: 1, Layout: LayoutMap}
	b := Schema{Name: "b", Kind: KindStream, Columns: []Column{{"id", TypeText}, {"t", TypeTimestamp}, {"n", TypeBigint}}, Key: 0, EventTime: 1}
	// pair row: a.k, a.ts, a.window_start, a.window_end, b.id, b.t, b.n
	on := &Expr{Op: OpEq, Type: TypeBoolean, Args: []*Expr{ColumnRef(0, TypeText), ColumnRef(4, TypeText)}}
	v := View{Name: "v", SQL: "…", Input: a, Where: on, GroupBy: []*Expr{ColumnRef(0, TypeText), ColumnRef(2, TypeTimestamp)},
		Pair: &PairJoin{Right: b, LeftKey: 0, RightKey: 0, LeftWindow: &Window{Kind: WindowTumble, SizeMs: 1000},
			RightWindow: &Window{Kind: WindowTumble, SizeMs: 1000}, HasLo: true, LoMs: -999, HasHi: true, HiMs: 999},
		Output: []*Expr{ColumnRef(0, TypeText), ColumnRef(1, TypeTimestamp)},
		Schema: Schema{Name: "v", Kind: KindView, Key: -1, EventTime: -1, Columns: []Column{{"k", TypeText}, {"ws", TypeTimestamp}}},
		Emit:   EmitChanges}
	return &Plan{Version: 2, Relations: []Schema{a, b}, Views: []View{v}}
}

func TestSeedPairPlanRoundTrip(t *testing.T) {
	p := seedPairPlan()
	b, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	q, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if names, err := q.ProcessorNames(); err != nil || len(names) != 3 || q.MinVersion() != 2 {
		t.Fatalf("processors %v, %v, version %d", names, err, q.MinVersion())
	}
	q.Views[0].Pair.LeftKey = 1 // a timestamp against text
	if err := q.Validate(); err == nil {
		t.Errorf("a join of columns of different types validated")
	}
}

func TestSeedPlanRoundTrip(t *testing.T) {
	p := seedPlan()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	q, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := q.Encode()
	if !bytes.Equal(b, b2) {
		t.Fatalf("re-encoding differs:\n%x\n%x", b, b2)
	}
	if names, err := q.ProcessorNames(); err != nil || len(names) != 2 {
		t.Fatalf("processors %v, %v", names, err)
	}
}

// FuzzDecode: plan bytes come from the log. Decode never panics; a plan it accepts
// re-encodes to bytes it decodes to the same plan, and yields its processors.
func FuzzDecode(f *testing.F) {
	b, err := seedPlan().Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	if b, err = seedPairPlan().Encode(); err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode(data)
		if err != nil {
			return
		}
		b, err := p.Encode()
		if err != nil {
			t.Fatal(err)
		}
		q, err := Decode(b)
		if err != nil {
			t.Fatalf("re-encoded plan refused: %v", err)
		}
		b2, _ := q.Encode()
		if !bytes.Equal(b, b2) {
			t.Fatalf("re-encoding is not stable")
		}
		if _, err := q.processors(); err != nil {
			t.Logf("processors: %v", err)
		}
	})
}

// FuzzDecodeRow: rows come from clients. DecodeRow never panics, and a row it accepts
// re-encodes canonically to a row that decodes alike.
func FuzzDecodeRow(f *testing.F) {
	s := seedPlan().Relations[0]
	f.Add(AppendRow(nil, []any{"k", int64(1), int64(2)}))
	f.Add(AppendRow(nil, []any{"k", nil, int64(-5)}))
	f.Fuzz(func(t *testing.T, data []byte) {
		row, err := s.DecodeRow(data)
		if err != nil {
			return
		}
		enc, err := s.EncodeRow(row)
		if err != nil {
			t.Fatalf("decoded row does not encode: %v", err)
		}
		again, err := s.DecodeRow(enc)
		if err != nil || !bytes.Equal(AppendRow(nil, again), enc) {
			t.Fatalf("canonical row does not round-trip: %v", err)
		}
	})
}

// FuzzDecodeRecord: map-layout records come from clients too. DecodeRecord never
// panics, and a record it accepts re-encodes to one that decodes to the same row.
func FuzzDecodeRecord(f *testing.F) {
	s := seedPlan().Relations[0]
	s.Layout = LayoutMap
	good, _ := s.EncodeRecord([]any{"k", int64(1), int64(2)})
	f.Add(good)
	f.Add([]byte{0x81, 0xa1, 'k', 0xa1, 'x'})
	f.Fuzz(func(t *testing.T, data []byte) {
		row, err := s.DecodeRecord(data)
		if err != nil {
			return
		}
		enc, err := s.EncodeRecord(row)
		if err != nil {
			t.Fatalf("decoded record does not encode: %v", err)
		}
		again, err := s.DecodeRecord(enc)
		if err != nil || !bytes.Equal(AppendRow(nil, again), AppendRow(nil, row)) {
			t.Fatalf("record does not round-trip: %v", err)
		}
	})
}
