package procedures

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/procedures/schema"
	"github.com/vmihailenco/msgpack/v5"
)

// reflectCounterAdd decodes raw as the runner decodes arguments without a fastCodec.
func reflectCounterAdd(raw []byte) (builtin.CounterAddArgs, error) {
	var a builtin.CounterAddArgs
	rd := bytes.NewReader(raw)
	dec := msgpack.NewDecoder(rd)
	if err := dec.Decode(&a); err != nil {
		return a, err
	}
	if rd.Len() > 0 {
		return a, fmt.Errorf("trailing bytes")
	}
	return a, nil
}

// checkCounterAddDecoder fails t if the fast decoder of counter.add accepts raw while the
// reflective decoder refuses it, or decodes it to another value; it reports whether the
// fast decoder accepted raw.
func checkCounterAddDecoder(t testing.TB, raw []byte) bool {
	t.Helper()
	var got builtin.CounterAddArgs
	ok := newCounterAddArgs().decode(raw, &got)
	if schema.CheckMsgpack(raw) != nil {
		return false // the runner refuses these before any decoder sees them
	}
	want, err := reflectCounterAdd(raw)
	switch {
	case ok && err != nil:
		t.Fatalf("args %x: the fast decoder accepts %+v, the reflective decoder refuses: %v", raw, got, err)
	case ok && got != want:
		t.Fatalf("args %x: fast decoder %+v, reflective decoder %+v", raw, got, want)
	}
	return ok
}

// randomCounterAddArgs returns counter.add arguments in the encodings msgpack allows for
// an integer, with other field names, value types, extra fields, truncations and trailing
// bytes mixed in.
func randomCounterAddArgs(rng *rand.Rand) []byte {
	var b []byte
	fields := 1
	switch rng.IntN(10) {
	case 0:
		fields = 0
	case 1:
		fields = 2
	}
	switch rng.IntN(8) {
	case 0:
		b = binary.BigEndian.AppendUint16(append(b, 0xde), uint16(fields))
	case 1:
		b = append(b, 0x91) // an array, not a map
	default:
		b = append(b, 0x80|byte(fields))
	}
	for range fields {
		switch rng.IntN(10) {
		case 0:
			b = append(b, 0xa1, 'x')
		case 1:
			b = append(b, 0xd9, 1, 'd') // str8 name
		case 2:
			b = append(b, 0xa2, 'd', 'd')
		default:
			b = append(b, 0xa1, 'd')
		}
		v := int64(rng.Uint64()) >> rng.IntN(64)
		switch rng.IntN(14) {
		case 0:
			b = append(b, 0xc0)
		case 1:
			b = append(b, byte(v)&0x7f)
		case 2:
			b = append(b, 0xe0|byte(v)&0x1f)
		case 3:
			b = append(b, 0xcc, byte(v))
		case 4:
			b = append(b, 0xd0, byte(v))
		case 5:
			b = binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(v))
		case 6:
			b = binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(v))
		case 7:
			b = binary.BigEndian.AppendUint32(append(b, 0xce), uint32(v))
		case 8:
			b = binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(v))
		case 9:
			b = binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(v))
		case 10:
			b = binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(float64(v)))
		case 11:
			b = append(b, 0xa1, 'v')
		case 12:
			b = append(b, 0xc3)
		default:
			b = binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(v))
		}
	}
	if rng.IntN(20) == 0 {
		b = append(b, 0x01)
	}
	if rng.IntN(20) == 0 && len(b) > 0 {
		b = b[:rng.IntN(len(b))]
	}
	return b
}

// TestCounterAddDecoderAgrees is the property test of counter.add's fast decoder: it
// accepts only what the reflective decoder accepts and decodes it to the same value, and
// takes the common shapes itself (what it declines goes to the reflective decoder, so the
// procedure accepts and refuses the same bytes with it as without it).
func TestCounterAddDecoderAgrees(t *testing.T) {
	checkDecoderAgrees(t, rand.NewPCG(5, 6), randomCounterAddArgs, checkCounterAddDecoder, reflectCounterAdd)
	// What the Go client sends takes the fast path.
	for _, d := range []int64{0, 1, -3, math.MaxInt64, math.MinInt64} {
		raw, err := msgpack.Marshal(builtin.CounterAddArgs{Delta: d})
		if err != nil {
			t.Fatal(err)
		}
		if !checkCounterAddDecoder(t, raw) {
			t.Errorf("%x: the fast decoder declines what the client sends", raw)
		}
	}
}

// checkDecoderAgrees runs check (a fast decoder against the reflective one) on 20,000
// argument encodings from gen, and fails when the fast decoder takes under a third of them
// or the reflective one refuses none (the generator would be too narrow to tell).
func checkDecoderAgrees[T any](t *testing.T, src rand.Source, gen func(*rand.Rand) []byte, check func(testing.TB, []byte) bool, reflective func([]byte) (T, error)) {
	t.Helper()
	rng := rand.New(src)
	var fast, reflectOK int
	const n = 20000
	for range n {
		raw := gen(rng)
		if check(t, raw) {
			fast++
		}
		if _, err := reflective(raw); err == nil {
			reflectOK++
		}
	}
	t.Logf("%d of %d accepted by the fast decoder, %d by the reflective one", fast, n, reflectOK)
	if fast < n/3 || reflectOK == n {
		t.Fatalf("the generator is too narrow: %d fast, %d reflective of %d", fast, reflectOK, n)
	}
}

// TestCounterAddResultEncoding: the result is encoded byte for byte as the runner's
// msgpack encoder encodes an int64.
func TestCounterAddResultEncoding(t *testing.T) {
	c := newCounterAddArgs()
	for _, n := range []int64{0, 1, -1, 127, -33, 1 << 40, math.MaxInt64, math.MinInt64} {
		var w appendWriter
		if err := msgpack.NewEncoder(&w).Encode(&n); err != nil {
			t.Fatal(err)
		}
		if got := c.appendResult([]byte("p"), n); !bytes.Equal(got[1:], w.b) || got[0] != 'p' {
			t.Fatalf("%d: encoded %x, msgpack %x", n, got, w.b)
		}
	}
}

// FuzzCounterAddArgs: for any bytes, the fast decoder of counter.add accepts only what
// the reflective decoder accepts, and decodes it to the same value.
func FuzzCounterAddArgs(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 40 {
		f.Add(randomCounterAddArgs(rng))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkCounterAddDecoder(t, raw) })
}

// TestCounterAddFastEngineAgrees runs the same counter.add inputs, valid and broken, on an
// engine whose procedure has the fast codec and on one that decodes and encodes by
// reflection only: results, errors (typed ErrBadArguments alike) and partition hashes must
// be identical.
func TestCounterAddFastEngineAgrees(t *testing.T) {
	checkEnginesAgree(t, builtin.CounterAdd, "c", 4000, randomCounterAddArgs, 1,
		func(reg *Registry) error { return register(reg, builtin.CounterAdd, counterAdd, newCounterAddArgs) },
		func(reg *Registry) error { return Register(reg, builtin.CounterAdd, counterAdd) })
}

// checkEnginesAgree runs n inputs of proc (keys prefix0..prefix19, arguments from args)
// on an engine registered by fast and on one registered by slow: results, errors and
// partition hashes must be identical, and the inputs must include at least 1000 that
// succeed and 100 refused as bad arguments. Each engine first executes setup.
func checkEnginesAgree(t *testing.T, proc, prefix string, n int, args func(*rand.Rand) []byte, seed uint64, fast, slow func(*Registry) error, setup ...partition.Input) {
	t.Helper()
	const parts = 2
	build := func(reg func(*Registry) error) *partition.Engine {
		r := New()
		if err := reg(r); err != nil {
			t.Fatal(err)
		}
		eng, err := partition.NewEngine(partition.Config{Partitions: parts}, r.NewHandler)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(eng.Close)
		for _, in := range setup {
			if r := eng.Execute([]partition.Input{in})[0]; r.Err != nil {
				t.Fatalf("setup %s: %v", in.Procedure, r.Err)
			}
		}
		return eng
	}
	engines := [2]*partition.Engine{build(fast), build(slow)}
	rng := rand.New(rand.NewPCG(seed, seed))
	var ok, bad int
	for i := range n {
		key := fmt.Appendf(nil, "%s%d", prefix, rng.IntN(20))
		in := partition.Input{Procedure: proc, Key: key, Partition: partition.PartitionOf(key, parts),
			Args: args(rng), Seq: uint64(i + 1), Time: 1_764_400_000_000_000_000}
		var res [2]partition.Result
		for e, eng := range engines {
			r := eng.Execute([]partition.Input{in})[0]
			res[e] = partition.Result{Value: bytes.Clone(r.Value), Err: r.Err}
		}
		if !bytes.Equal(res[0].Value, res[1].Value) || fmt.Sprint(res[0].Err) != fmt.Sprint(res[1].Err) {
			t.Fatalf("#%d: args %.100x: fast %x %v, reflective %x %v", i, in.Args, res[0].Value, res[0].Err, res[1].Value, res[1].Err)
		}
		switch {
		case res[0].Err == nil:
			ok++
		case errors.Is(res[0].Err, ErrBadArguments) && errors.Is(res[1].Err, ErrBadArguments):
			bad++
		}
		for p := range parts {
			if h0, h1 := engines[0].Partitions()[p].Hash(), engines[1].Partitions()[p].Hash(); h0 != h1 {
				t.Fatalf("#%d: partition %d: hash %x with the fast codec, %x without", i, p, h0, h1)
			}
		}
	}
	if ok < 1000 || bad < 100 {
		t.Fatalf("%d inputs succeeded, %d refused as bad arguments: the test is too narrow", ok, bad)
	}
}
