package window

import (
	"bytes"
	"math"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// checkScalar: st encodes to msgpack.Marshal's bytes, through the typed path, and
// decodes, from those bytes and from msgpack's compact form of them, to what
// msgpack.Unmarshal gives.
func checkScalar[S any](t *testing.T, st windowState[S]) {
	t.Helper()
	want, err := msgpack.Marshal(&st)
	if err != nil {
		t.Fatal(err)
	}
	c := stateCodecs.New().(*stateCodec)
	c.enc.Reset(&c.w)
	if ok, err := encodeScalar(c, &st); !ok || err != nil {
		t.Fatalf("%+v: not encoded by the typed path (%v)", st, err)
	}
	got, err := encodeState(c, &st, true)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%+v: encoded %x (%v), msgpack.Marshal %x", st, got, err, want)
	}
	var compact bytes.Buffer
	e := msgpack.NewEncoder(&compact)
	e.UseCompactInts(true)
	if err := e.Encode(&st); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{want, compact.Bytes()} {
		var w, g windowState[S]
		if err := msgpack.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
		if !decodeScalar(c, b, &g) || !reflect.DeepEqual(g, w) {
			t.Fatalf("%x: decoded %+v, msgpack.Unmarshal %+v", b, g, w)
		}
	}
}

func TestScalarStateCodec(t *testing.T) {
	ints := []int64{0, 1, -1, 31, -32, 127, 128, -129, 255, 1 << 15, -1 << 15, 1 << 31, -1 << 40, math.MaxInt64, math.MinInt64}
	for _, n := range ints {
		for _, em := range []int{0, 1, 200, 70000} {
			checkScalar(t, windowState[int64]{End: n, Emitted: em, Value: n})
			checkScalar(t, windowState[int]{End: -n, Emitted: em, Value: int(n)})
		}
	}
	for _, f := range []float64{0, -0.5, math.Inf(1), math.MaxFloat64, 1e-300} {
		checkScalar(t, windowState[float64]{End: 5, Value: f})
	}
	for _, s := range []string{"", "a", string(make([]byte, 40)), string(make([]byte, 300)), string(make([]byte, 70000))} {
		checkScalar(t, windowState[string]{End: 1 << 50, Emitted: 3, Value: s})
	}
	checkScalar(t, windowState[bool]{End: 9, Value: true})
	checkScalar(t, windowState[bool]{End: 9})
}

// TestScalarStateFallback: bytes the typed path does not read (another layout, a value of
// another type, truncated) are left to reflection, which decodes them or fails as before.
func TestScalarStateFallback(t *testing.T) {
	c := stateCodecs.New().(*stateCodec)
	full, _ := msgpack.Marshal(&windowState[int64]{End: 7, Emitted: 1, Value: 9})
	for _, b := range [][]byte{full[:len(full)-1], {0x92, 1, 2}, {0x93, 1, 2, 0xa1, 'x'}, {}, {0xc0}} {
		st := windowState[int64]{End: 42}
		if decodeScalar(c, b, &st) || st.End != 42 {
			t.Errorf("%x: decoded by the typed path: %+v", b, st)
		}
	}
	var st windowState[struct{ N int64 }]
	if decodeScalar(c, full, &st) {
		t.Error("a struct value decoded by the typed path")
	}
	if err := decodeState(full[:len(full)-1], &windowState[int64]{}); err == nil {
		t.Error("truncated state decoded")
	}
}
