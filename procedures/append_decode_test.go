package procedures

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/procedures/schema"
	"github.com/vmihailenco/msgpack/v5"
)

// reflectAppend decodes raw as the runner decodes arguments without a fastCodec.
func reflectAppend(raw []byte) (builtin.StreamAppendArgs, error) {
	var a builtin.StreamAppendArgs
	rd := bytes.NewReader(raw)
	dec := msgpack.NewDecoder(rd)
	dec.DisallowUnknownFields(true)
	if err := dec.Decode(&a); err != nil {
		return a, err
	}
	if rd.Len() > 0 {
		return a, fmt.Errorf("trailing bytes")
	}
	return a, nil
}

// checkAppendDecoder fails t if the fast decoder of stream.append accepts raw while the
// reflective decoder refuses it, or decodes it to another value; it reports whether the
// fast decoder accepted raw.
func checkAppendDecoder(t testing.TB, raw []byte) bool {
	t.Helper()
	var got builtin.StreamAppendArgs
	ok := newAppendArgs().decode(raw, &got)
	if schema.CheckMsgpack(raw) != nil {
		return false // the runner refuses these before any decoder sees them
	}
	want, err := reflectAppend(raw)
	switch {
	case ok && err != nil:
		t.Fatalf("args %x: the fast decoder accepts %+v, the reflective decoder refuses: %v", raw, got, err)
	case ok && !reflect.DeepEqual(got, want):
		t.Fatalf("args %x: fast decoder %#v, reflective decoder %#v", raw, got, want)
	}
	return ok
}

// randomAppendArgs writes random stream.append arguments: mostly well formed in any
// encoding, sometimes with a field repeated, unknown, missing, of the wrong type, as an
// array, with trailing bytes, or cut short.
func randomAppendArgs(rng *rand.Rand) []byte {
	w := &mpWriter{rng: rng, wild: rng.IntN(2) == 0}
	odd := func() bool { return w.wild && rng.IntN(12) == 0 }
	randBytes := func(max int) []byte {
		b := make([]byte, rng.IntN(max+1))
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return b
	}
	times := []int64{0, 1, -1, 127, 128, -33, 1_764_400_000_000, math.MaxInt64, math.MinInt64, rng.Int64()}
	fields := []string{"s", "r", "t"}
	if rng.IntN(3) == 0 {
		fields = fields[:2] // omitempty t
	}
	if odd() {
		fields = fields[:rng.IntN(len(fields))]
	}
	if odd() {
		fields = append(fields, []string{"s", "r", "t", "x", "S"}[rng.IntN(5)])
	}
	rng.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
	if odd() {
		w.arrayHeader(len(fields))
	} else {
		w.mapHeader(len(fields))
	}
	for _, f := range fields {
		w.name(f)
		switch {
		case f == "t" && odd():
			w.bytes(randBytes(2))
		case f == "t":
			w.int(times[rng.IntN(len(times))])
		case f == "s" && odd():
			w.int(5)
		case f == "r" && odd():
			w.int(7)
		default:
			w.bytes(randBytes(60))
		}
	}
	if rng.IntN(25) == 0 {
		w.b = append(w.b, 0x01)
	}
	if rng.IntN(25) == 0 && len(w.b) > 0 {
		w.b = w.b[:rng.IntN(len(w.b))]
	}
	return w.b
}

// TestAppendDecoderAgrees is the property test of stream.append's fast decoder: over
// random arguments in every encoding msgpack allows, it accepts only what the reflective
// decoder accepts and decodes it to the same value.
func TestAppendDecoderAgrees(t *testing.T) {
	checkDecoderAgrees(t, rand.NewPCG(5, 6), randomAppendArgs, checkAppendDecoder, reflectAppend)
}

// TestAppendDecoderClientShapes: the fast decoder takes what the Go client sends.
func TestAppendDecoderClientShapes(t *testing.T) {
	for i, a := range []builtin.StreamAppendArgs{
		{Stream: "bid", Record: []byte("v"), EventTime: 1_764_400_000_000},
		{Stream: "s", Record: []byte{}},
		{Stream: string(make([]byte, 300)), Record: make([]byte, 70000), EventTime: -1},
	} {
		raw, err := msgpack.Marshal(&a)
		if err != nil {
			t.Fatal(err)
		}
		if !checkAppendDecoder(t, raw) {
			t.Errorf("#%d: %x: the fast decoder declines what the client sends", i, raw)
		}
	}
}

// TestAppendResultEncoding: the offset is encoded byte for byte as the runner's msgpack
// encoder encodes a uint64.
func TestAppendResultEncoding(t *testing.T) {
	c := newAppendArgs()
	for _, n := range []uint64{0, 1, 127, 128, 1 << 40, math.MaxUint64} {
		var w appendWriter
		enc := msgpack.NewEncoder(&w)
		enc.SetSortMapKeys(true)
		if err := enc.Encode(&n); err != nil {
			t.Fatal(err)
		}
		if got := c.appendResult([]byte("p"), n); !bytes.Equal(got[1:], w.b) || got[0] != 'p' {
			t.Fatalf("%d: encoded %x, msgpack %x", n, got, w.b)
		}
	}
}

// FuzzAppendArgs: for any bytes, the fast decoder of stream.append accepts only what the
// reflective decoder accepts, and decodes it to the same value.
func FuzzAppendArgs(f *testing.F) {
	rng := rand.New(rand.NewPCG(9, 10))
	for range 40 {
		f.Add(randomAppendArgs(rng))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkAppendDecoder(t, raw) })
}

// TestAppendFastEngineAgrees runs the same stream.append inputs, valid and broken, on an
// engine whose procedure has the fast codec and on one that decodes and encodes by
// reflection only: results, errors and partition hashes must be identical.
func TestAppendFastEngineAgrees(t *testing.T) {
	create, _ := msgpack.Marshal(builtin.StreamDefinition{Name: "s"})
	args := func(rng *rand.Rand) []byte {
		if rng.IntN(3) == 0 { // the stream the generator names is random: often name "s"
			b, _ := msgpack.Marshal(&builtin.StreamAppendArgs{Stream: "s", Record: []byte("v"), EventTime: rng.Int64N(1 << 40)})
			return b
		}
		return randomAppendArgs(rng)
	}
	reg := func(fast bool) func(*Registry) error {
		return func(r *Registry) error {
			if err := Register(r, builtin.StreamCreate, streamCreate, MultiPartition()); err != nil {
				return err
			}
			if fast {
				return register(r, builtin.StreamAppend, streamAppend, newAppendArgs)
			}
			return Register(r, builtin.StreamAppend, streamAppend)
		}
	}
	checkEnginesAgree(t, builtin.StreamAppend, "k", 4000, args, 3, reg(true), reg(false),
		partition.Input{Procedure: builtin.StreamCreate, Scope: partition.AllPartitions(2), Args: create, Seq: 1})
}
