package schema

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// Test types covering the msgpack struct rules.
type (
	tagged struct {
		A        int64 `msgpack:"a"`
		B        string
		Skipped  bool    `msgpack:"-"`
		Opt      *uint16 `msgpack:"o,omitempty"`
		private  int
		Floats   []float32          `msgpack:"f"`
		ByName   map[string][]byte  `msgpack:"m"`
		Fixed    [4]byte            `msgpack:"x"`
		Pairs    [2]int8            `msgpack:"p"`
		Anything any                `msgpack:"any"`
		ByID     map[uint32]*tagged `msgpack:"ids"`
	}
	arrayStruct struct {
		_msgpack struct{} `msgpack:",as_array,omitempty"`
		X, Y     int32
	}
	Inner struct {
		I int `msgpack:"i"`
	}
	embeds struct {
		Inner
		N string `msgpack:"n"`
	}
	shadows struct {
		I string `msgpack:"i"`
		Inner
	}
	noInline struct {
		Inner `msgpack:"in,noinline"`
	}
	tree struct {
		Value int64     `msgpack:"v"`
		Kids  []tree    `msgpack:"k"`
		Next  *tree     `msgpack:"n"`
		Meta  *Inner    `msgpack:"m"`
		Other *list     `msgpack:"o"`
		When  time.Time `msgpack:"t"`
	}
	list struct {
		Head int64 `msgpack:"h"`
		Tail *list `msgpack:"t"`
	}
	selfEmbed struct {
		*selfEmbed
		V int `msgpack:"v"`
	}
	encodesItself struct{ X int }
	deep          struct{ D *deep2 }
	deep2         struct{ D []deep }
)

func (encodesItself) EncodeMsgpack(*msgpack.Encoder) error { return nil }

func i64() *Type { return &Type{Kind: KindInt, Bits: 64} }

func TestOf(t *testing.T) {
	u16 := Type{Kind: KindUint, Bits: 16}
	innerT := Type{Kind: KindStruct, Name: "schema.Inner", Fields: []Field{{Name: "i", GoName: "I", Type: *i64()}}}
	taggedFields := []Field{
		{Name: "a", GoName: "A", Type: *i64()},
		{Name: "B", GoName: "B", Type: Type{Kind: KindString}},
		{Name: "o", GoName: "Opt", OmitEmpty: true, Type: Type{Kind: KindNullable, Elem: &u16}},
		{Name: "f", GoName: "Floats", Type: Type{Kind: KindSlice, Elem: &Type{Kind: KindFloat, Bits: 32}}},
		{Name: "m", GoName: "ByName", Type: Type{Kind: KindMap, Key: &Type{Kind: KindString}, Elem: &Type{Kind: KindBytes}}},
		{Name: "x", GoName: "Fixed", Type: Type{Kind: KindBytes, Len: 4}},
		{Name: "p", GoName: "Pairs", Type: Type{Kind: KindArray, Len: 2, Elem: &Type{Kind: KindInt, Bits: 8}}},
		{Name: "any", GoName: "Anything", Type: Type{Kind: KindAny}},
		{Name: "ids", GoName: "ByID", Type: Type{Kind: KindMap, Key: &Type{Kind: KindUint, Bits: 32},
			Elem: &Type{Kind: KindNullable, Elem: &Type{Kind: KindRef, Name: "schema.tagged"}}}},
	}
	listT := Type{Kind: KindStruct, Name: "schema.list", Fields: []Field{
		{Name: "h", GoName: "Head", Type: *i64()},
		{Name: "t", GoName: "Tail", Type: Type{Kind: KindNullable, Elem: &Type{Kind: KindRef, Name: "schema.list"}}},
	}}
	for i, tc := range []struct {
		typ  reflect.Type
		want Type
	}{
		// Every built-in's types.
		{reflect.TypeFor[builtin.NoArgs](), Type{Kind: KindStruct, Name: "builtin.NoArgs"}},
		{reflect.TypeFor[builtin.CounterAddArgs](), Type{Kind: KindStruct, Name: "builtin.CounterAddArgs",
			Fields: []Field{{Name: "d", GoName: "Delta", Type: *i64()}}}},
		{reflect.TypeFor[builtin.KVCasArgs](), Type{Kind: KindStruct, Name: "builtin.KVCasArgs", Fields: []Field{
			{Name: "o", GoName: "Old", Type: Type{Kind: KindBytes}},
			{Name: "oa", GoName: "OldAbsent", Type: Type{Kind: KindBool}},
			{Name: "n", GoName: "New", Type: Type{Kind: KindBytes}}}}},
		{reflect.TypeFor[builtin.VoterInitArgs](), Type{Kind: KindStruct, Name: "builtin.VoterInitArgs", Fields: []Field{
			{Name: "c", GoName: "Contestants", Type: Type{Kind: KindSlice, Elem: &Type{Kind: KindString}}},
			{Name: "m", GoName: "MaxVotesPerPhone", Type: *i64()}}}},
		// A custom decoder: the generic encoding, read by its own decoder.
		{reflect.TypeFor[builtin.VoteArgs](), Type{Kind: KindCustom, Name: "builtin.VoteArgs", Elem: &Type{
			Kind: KindStruct, Name: "builtin.VoteArgs", Fields: []Field{{Name: "c", GoName: "Contestant", Type: Type{Kind: KindInt, Bits: 32}}}}}},
		{reflect.TypeFor[builtin.VoteResult](), Type{Kind: KindInt, Bits: strconv.IntSize, Name: "builtin.VoteResult"}},
		{reflect.TypeFor[[]builtin.ContestantTotal](), Type{Kind: KindSlice, Elem: &Type{Kind: KindStruct, Name: "builtin.ContestantTotal", Fields: []Field{
			{Name: "c", GoName: "Contestant", Type: Type{Kind: KindInt, Bits: 32}},
			{Name: "n", GoName: "Name", Type: Type{Kind: KindString}},
			{Name: "v", GoName: "Votes", Type: *i64()}}}}},
		{reflect.TypeFor[uint64](), Type{Kind: KindUint, Bits: 64}},
		{reflect.TypeFor[bool](), Type{Kind: KindBool}},
		// Tags, "-", omitempty, unexported fields, bytes, arrays, maps, pointers, any.
		{reflect.TypeFor[tagged](), Type{Kind: KindStruct, Name: "schema.tagged", Fields: taggedFields}},
		{reflect.TypeFor[arrayStruct](), Type{Kind: KindStruct, Name: "schema.arrayStruct", AsArray: true, Fields: []Field{
			{Name: "X", GoName: "X", OmitEmpty: true, Type: Type{Kind: KindInt, Bits: 32}},
			{Name: "Y", GoName: "Y", OmitEmpty: true, Type: Type{Kind: KindInt, Bits: 32}}}}},
		// Embedded structs: inlined unless shadowed or noinline.
		{reflect.TypeFor[embeds](), Type{Kind: KindStruct, Name: "schema.embeds", Fields: []Field{
			{Name: "i", GoName: "I", Type: *i64()}, {Name: "n", GoName: "N", Type: Type{Kind: KindString}}}}},
		{reflect.TypeFor[shadows](), Type{Kind: KindStruct, Name: "schema.shadows", Fields: []Field{
			{Name: "i", GoName: "I", Type: Type{Kind: KindString}}, {Name: "Inner", GoName: "Inner", Type: innerT}}}},
		{reflect.TypeFor[noInline](), Type{Kind: KindStruct, Name: "schema.noInline", Fields: []Field{
			{Name: "in", GoName: "Inner", Type: innerT}}}},
		// Recursive types refer back; a type met twice on different paths is expanded twice.
		{reflect.TypeFor[list](), listT},
		{reflect.TypeFor[tree](), Type{Kind: KindStruct, Name: "schema.tree", Fields: []Field{
			{Name: "v", GoName: "Value", Type: *i64()},
			{Name: "k", GoName: "Kids", Type: Type{Kind: KindSlice, Elem: &Type{Kind: KindRef, Name: "schema.tree"}}},
			{Name: "n", GoName: "Next", Type: Type{Kind: KindNullable, Elem: &Type{Kind: KindRef, Name: "schema.tree"}}},
			{Name: "m", GoName: "Meta", Type: Type{Kind: KindNullable, Elem: &innerT}},
			{Name: "o", GoName: "Other", Type: Type{Kind: KindNullable, Elem: &listT}},
			{Name: "t", GoName: "When", Type: Type{Kind: KindCustom, Name: "time.Time"}}}}},
		{reflect.TypeFor[selfEmbed](), Type{Kind: KindStruct, Name: "schema.selfEmbed", Fields: []Field{
			{Name: "selfEmbed", GoName: "selfEmbed", Type: Type{Kind: KindNullable, Elem: &Type{Kind: KindRef, Name: "schema.selfEmbed"}}},
			{Name: "v", GoName: "V", Type: *i64()}}}},
		// A custom encoder: its encoding is its own.
		{reflect.TypeFor[encodesItself](), Type{Kind: KindCustom, Name: "schema.encodesItself"}},
		{reflect.TypeFor[*encodesItself](), Type{Kind: KindNullable, Elem: &Type{Kind: KindCustom, Name: "schema.encodesItself"}}},
		{reflect.TypeFor[msgpack.RawMessage](), Type{Kind: KindCustom, Name: "msgpack.RawMessage"}},
		{reflect.TypeFor[chan int](), Type{Kind: KindUnsupported}},
	} {
		if got := Of(tc.typ); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("#%d %v:\ngot  %s\nwant %s", i, tc.typ, dump(got), dump(tc.want))
		}
	}
}

// TestOfBounded checks that types too deep or too large are cut, not followed: a chain of
// distinct types deeper than MaxDepth, and a wide struct of many fields.
func TestOfBounded(t *testing.T) {
	typ := reflect.TypeFor[int64]()
	for range MaxDepth + 10 {
		typ = reflect.SliceOf(reflect.MapOf(reflect.TypeFor[string](), typ))
	}
	got := Of(typ)
	if d := depthOf(&got); d > MaxDepth {
		t.Errorf("depth %d, want at most %d", d, MaxDepth)
	}
	var fields []reflect.StructField
	for i := range 2 * MaxNodes {
		fields = append(fields, reflect.StructField{Name: "F" + strconv.Itoa(i), Type: reflect.TypeFor[[]int64]()})
	}
	wide := Of(reflect.StructOf(fields))
	if n := nodesOf(&wide); n > MaxNodes+1 {
		t.Errorf("%d nodes, want at most %d", n, MaxNodes+1)
	}
	if wide.Kind != KindAny {
		t.Errorf("a struct whose fields do not fit: got %s, want %s", wide.Kind, KindAny)
	}
}

func depthOf(t *Type) int {
	d := 0
	for _, c := range children(t) {
		d = max(d, depthOf(c))
	}
	return d + 1
}

func nodesOf(t *Type) int {
	n := 1
	for _, c := range children(t) {
		n += nodesOf(c)
	}
	return n
}

func children(t *Type) []*Type {
	var out []*Type
	if t.Key != nil {
		out = append(out, t.Key)
	}
	if t.Elem != nil {
		out = append(out, t.Elem)
	}
	for i := range t.Fields {
		out = append(out, &t.Fields[i].Type)
	}
	return out
}

// TestRoundTrip checks that a Type, and a catalogue, survive msgpack (the wire) unchanged.
func TestRoundTrip(t *testing.T) {
	in := []Procedure{
		{Name: "x.tree", Doc: "d", ReadOnly: true, Multi: true, Args: Of(reflect.TypeFor[tree]()), Result: Of(reflect.TypeFor[tagged]())},
		{Name: "x.none", Args: Of(reflect.TypeFor[builtin.NoArgs]()), Result: Of(reflect.TypeFor[int64]())},
	}
	b, err := msgpack.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out []Procedure
	if err := msgpack.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("got %v, want %v", out, in)
	}
}

func dump(t Type) string {
	b, _ := jsonMarshal(t)
	return string(b)
}
