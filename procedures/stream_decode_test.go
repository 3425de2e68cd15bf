package procedures

import (
	"bytes"
	"encoding/binary"
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

// reflectAppendBatch decodes raw as the runner decodes arguments without a fastArgs.
func reflectAppendBatch(raw []byte) (builtin.StreamAppendBatchArgs, error) {
	var a builtin.StreamAppendBatchArgs
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

// checkAppendBatchDecoder fails t if the fast decoder accepts raw while the reflective
// decoder refuses it, or decodes it to another value. It reports whether the fast decoder
// accepted raw.
func checkAppendBatchDecoder(t testing.TB, d fastCodec[builtin.StreamAppendBatchArgs, []uint64], raw []byte) bool {
	t.Helper()
	var got builtin.StreamAppendBatchArgs
	ok := d.decode(raw, &got)
	defer d.release()
	if err := schema.CheckMsgpack(raw); err != nil {
		// The runner refuses these before any decoder sees them (the reflective one would
		// allocate what a length header claims).
		return false
	}
	want, err := reflectAppendBatch(raw)
	switch {
	case ok && err != nil:
		t.Fatalf("args %.300x: the fast decoder accepts %.300v, the reflective decoder refuses: %v", raw, got, err)
	case ok && !reflect.DeepEqual(got, want):
		for i := range min(len(got.Records), len(want.Records)) {
			if !reflect.DeepEqual(got.Records[i], want.Records[i]) {
				t.Fatalf("args %.300x: record %d: fast decoder %#v, reflective decoder %#v", raw, i, got.Records[i], want.Records[i])
			}
		}
		t.Fatalf("args %.300x: fast decoder stream %q, %d records; reflective decoder %q, %d records",
			raw, got.Stream, len(got.Records), want.Stream, len(want.Records))
	}
	return ok
}

// mpWriter writes msgpack with a choice of encodings for each value, so that the property
// test covers encodings the Go client never sends.
type mpWriter struct {
	b    []byte
	rng  *rand.Rand
	wild bool // also nil values, non-fixstr names and float integers
}

func (w *mpWriter) header(n int, fix, fixMax byte, c16, c32 byte) {
	switch r := w.rng.IntN(4); {
	case r == 0 && n <= 0xffff:
		w.b = append(w.b, c16)
		w.b = binary.BigEndian.AppendUint16(w.b, uint16(n))
	case r == 1:
		w.b = append(w.b, c32)
		w.b = binary.BigEndian.AppendUint32(w.b, uint32(n))
	case n <= int(fixMax):
		w.b = append(w.b, fix|byte(n))
	default:
		w.b = append(w.b, c16)
		w.b = binary.BigEndian.AppendUint16(w.b, uint16(n))
	}
}

func (w *mpWriter) mapHeader(n int)   { w.header(n, 0x80, 15, 0xde, 0xdf) }
func (w *mpWriter) arrayHeader(n int) { w.header(n, 0x90, 15, 0xdc, 0xdd) }

// name writes a field name, mostly as fixstr, sometimes as str8 or bin8.
func (w *mpWriter) name(s string) {
	switch r := w.rng.IntN(10); {
	case !w.wild:
		w.b = append(w.b, 0xa0|byte(len(s)))
	case r == 0:
		w.b = append(w.b, 0xd9, byte(len(s)))
	case r == 1:
		w.b = append(w.b, 0xc4, byte(len(s)))
	default:
		w.b = append(w.b, 0xa0|byte(len(s)))
	}
	w.b = append(w.b, s...)
}

// bytes writes b as str or bin of any width, or nil (rarely).
func (w *mpWriter) bytes(b []byte) {
	n := len(b)
	switch r := w.rng.IntN(9); {
	case r == 0 && w.wild:
		w.b = append(w.b, 0xc0)
		return
	case r == 1 && n <= 31:
		w.b = append(w.b, 0xa0|byte(n))
	case r == 2 && n <= 0xff:
		w.b = append(w.b, 0xd9, byte(n))
	case r == 3:
		w.b = append(w.b, 0xda)
		w.b = binary.BigEndian.AppendUint16(w.b, uint16(n))
	case r == 4:
		w.b = append(w.b, 0xdb)
		w.b = binary.BigEndian.AppendUint32(w.b, uint32(n))
	case r == 5:
		w.b = append(w.b, 0xc5)
		w.b = binary.BigEndian.AppendUint16(w.b, uint16(n))
	case r == 6:
		w.b = append(w.b, 0xc6)
		w.b = binary.BigEndian.AppendUint32(w.b, uint32(n))
	default:
		if n > 0xff {
			w.b = append(w.b, 0xc5)
			w.b = binary.BigEndian.AppendUint16(w.b, uint16(n))
		} else {
			w.b = append(w.b, 0xc4, byte(n))
		}
	}
	w.b = append(w.b, b...)
}

// int writes v with a random integer (or float, or nil for 0) encoding that holds it.
func (w *mpWriter) int(v int64) {
	codes := []byte{0xd3}
	if v >= 0 {
		codes = append(codes, 0xcf)
	}
	for _, c := range []struct {
		code   byte
		lo, hi int64
	}{{0xcc, 0, math.MaxUint8}, {0xcd, 0, math.MaxUint16}, {0xce, 0, math.MaxUint32},
		{0xd0, math.MinInt8, math.MaxInt8}, {0xd1, math.MinInt16, math.MaxInt16}, {0xd2, math.MinInt32, math.MaxInt32},
		{0x00, 0, 127}, {0xe0, -32, -1}, {0xc0, 0, 0}, {0xcb, -1 << 52, 1 << 52}} {
		if v >= c.lo && v <= c.hi && (w.wild || c.code != 0xcb) {
			codes = append(codes, c.code)
		}
	}
	switch c := codes[w.rng.IntN(len(codes))]; c {
	case 0x00, 0xe0:
		w.b = append(w.b, byte(v))
	case 0xc0:
		w.b = append(w.b, c)
	case 0xcc, 0xd0:
		w.b = append(w.b, c, byte(v))
	case 0xcd, 0xd1:
		w.b = binary.BigEndian.AppendUint16(append(w.b, c), uint16(v))
	case 0xce, 0xd2:
		w.b = binary.BigEndian.AppendUint32(append(w.b, c), uint32(v))
	case 0xcb:
		w.b = binary.BigEndian.AppendUint64(append(w.b, c), math.Float64bits(float64(v)))
	default:
		w.b = binary.BigEndian.AppendUint64(append(w.b, c), uint64(v))
	}
}

// randomAppendBatchArgs writes random stream.append_batch arguments: mostly well formed in
// any encoding, sometimes with a field repeated, unknown, missing, of the wrong type, a
// record as an array or nil, trailing bytes, or cut short.
func randomAppendBatchArgs(rng *rand.Rand) []byte {
	w := &mpWriter{rng: rng, wild: rng.IntN(2) == 0}
	odd := func() bool { return w.wild && rng.IntN(25) == 0 }
	randBytes := func(max int) []byte {
		b := make([]byte, rng.IntN(max+1))
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return b
	}
	times := []int64{0, 1, -1, 127, 128, -33, 1_764_400_000_000, math.MaxInt64, math.MinInt64, rng.Int64()}
	fields := []string{"s", "r"}
	if odd() {
		fields = fields[:rng.IntN(2)]
	}
	if odd() {
		fields = append(fields, []string{"s", "r", "x", "S"}[rng.IntN(4)])
	}
	rng.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
	w.mapHeader(len(fields))
	for _, f := range fields {
		w.name(f)
		switch {
		case f == "s" && odd():
			w.int(5)
		case f == "s" || f == "S" || f == "x":
			w.bytes(randBytes(40))
		case odd():
			w.b = append(w.b, 0xc0)
		default:
			n := rng.IntN(20)
			if rng.IntN(10) == 0 {
				n = rng.IntN(300)
			}
			w.arrayHeader(n)
			for range n {
				if odd() {
					w.b = append(w.b, 0xc0) // a nil record
					continue
				}
				if odd() { // a record as an array, as msgpack's AsArray writes one
					w.arrayHeader(3)
					w.bytes(randBytes(4))
					w.bytes(randBytes(4))
					w.int(times[rng.IntN(len(times))])
					continue
				}
				rf := []string{"k", "v", "t"}
				if rng.IntN(3) == 0 {
					rf = rf[:2] // omitempty t
				}
				if odd() {
					rf = append(rf, []string{"k", "v", "t", "z"}[rng.IntN(4)])
				}
				rng.Shuffle(len(rf), func(i, j int) { rf[i], rf[j] = rf[j], rf[i] })
				w.mapHeader(len(rf))
				for _, g := range rf {
					w.name(g)
					switch {
					case g == "t" && odd():
						w.bytes(randBytes(2))
					case g == "t":
						w.int(times[rng.IntN(len(times))])
					default:
						w.bytes(randBytes(12))
					}
				}
			}
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

// TestAppendBatchDecoderAgrees is the decoder's property test: over random arguments in
// every encoding msgpack allows, well formed or not, the fast decoder of
// stream.append_batch accepts only what the reflective decoder accepts, decodes it to the
// same value, and handles the common shapes itself (DESIGN.md invariants 1 and 7: what it
// declines goes to the reflective decoder, so a procedure accepts and refuses the same
// bytes with it as without it).
func TestAppendBatchDecoderAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	d := newAppendBatchArgs()
	var fast, reflectOK int
	const n = 20000
	for range n {
		raw := randomAppendBatchArgs(rng)
		if checkAppendBatchDecoder(t, d, raw) {
			fast++
		}
		if _, err := reflectAppendBatch(raw); err == nil {
			reflectOK++
		}
	}
	t.Logf("%d of %d accepted by the fast decoder, %d by the reflective one", fast, n, reflectOK)
	if fast < n/10 || reflectOK == n {
		t.Fatalf("the generator is too narrow: %d fast, %d reflective of %d", fast, reflectOK, n)
	}
}

// TestAppendBatchDecoderClientShapes: what the Go client sends (msgpack.Marshal of
// StreamAppendBatchArgs) takes the fast path, and a refused shape leaves no references
// behind after release.
func TestAppendBatchDecoderClientShapes(t *testing.T) {
	d := newAppendBatchArgs().(*appendBatchArgs)
	for i, a := range []builtin.StreamAppendBatchArgs{
		{Stream: "s", Records: []builtin.StreamRecord{{Key: []byte("k"), Value: []byte("v")}}},
		{Stream: "clicks", Records: []builtin.StreamRecord{{Key: []byte("user/1"), Value: make([]byte, 100), EventTime: 1_764_400_000_000},
			{Key: []byte("u"), Value: []byte{}, EventTime: -5}}},
		{Stream: string(make([]byte, 300)), Records: make([]builtin.StreamRecord, 0)},
	} {
		raw, err := msgpack.Marshal(&a)
		if err != nil {
			t.Fatal(err)
		}
		if !checkAppendBatchDecoder(t, d, raw) {
			t.Errorf("#%d: %x: the fast decoder declines what the client sends", i, raw)
		}
	}
	big := builtin.StreamAppendBatchArgs{Stream: "s", Records: make([]builtin.StreamRecord, 3)}
	for i := range big.Records {
		big.Records[i] = builtin.StreamRecord{Key: []byte("k"), Value: []byte("v")}
	}
	raw, _ := msgpack.Marshal(&big)
	var got builtin.StreamAppendBatchArgs
	if !d.decode(raw, &got) {
		t.Fatal("declined")
	}
	d.release()
	for i, r := range d.recs[:cap(d.recs)] {
		if r.Key != nil || r.Value != nil {
			t.Fatalf("record %d of the scratch still points into the arguments after release: %+v", i, r)
		}
	}
}

// TestAppendBatchResultEncoding: the offsets are encoded byte for byte as the runner's
// msgpack encoder encodes a []uint64, at every array header width.
func TestAppendBatchResultEncoding(t *testing.T) {
	d := newAppendBatchArgs()
	for i, n := range []int{-1, 0, 1, 15, 16, 1000, 65535, 65536, 70000} {
		var offs []uint64
		if n >= 0 {
			offs = make([]uint64, n)
		}
		for j := range offs {
			offs[j] = uint64(j) * 0x0123456789 << (j % 30)
		}
		var w appendWriter
		enc := msgpack.NewEncoder(&w)
		enc.SetSortMapKeys(true)
		if err := enc.Encode(&offs); err != nil {
			t.Fatal(err)
		}
		if got := d.appendResult([]byte("prefix"), offs); !bytes.Equal(got[6:], w.b) || string(got[:6]) != "prefix" {
			t.Fatalf("#%d: %d offsets: encoded %.40x…, msgpack %.40x…", i, n, got, w.b)
		}
	}
}

// FuzzAppendBatchArgs: for any bytes, the fast decoder of stream.append_batch accepts only
// what the reflective decoder accepts, and decodes it to the same value.
func FuzzAppendBatchArgs(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 40 {
		f.Add(randomAppendBatchArgs(rng))
	}
	f.Add([]byte{0x82, 0xa1, 's', 0xa1, 'x', 0xa1, 'r', 0x91, 0x82, 0xa1, 'k', 0xc4, 1, 'k', 0xa1, 'v', 0xc4, 0})
	d := newAppendBatchArgs()
	f.Fuzz(func(t *testing.T, raw []byte) { checkAppendBatchDecoder(t, d, raw) })
}

// TestAppendBatchFastEngineAgrees runs the same stream.append_batch inputs, valid and
// broken, on an engine whose procedure has the fast decoder and on one that decodes by
// reflection only: results, errors and partition hashes must be identical (DESIGN.md
// invariant 1).
func TestAppendBatchFastEngineAgrees(t *testing.T) {
	const parts = 3
	build := func(fast bool) *partition.Engine {
		reg := New()
		MustRegister(reg, builtin.StreamCreate, streamCreate, MultiPartition())
		var err error
		if fast {
			err = register(reg, builtin.StreamAppendBatch, streamAppendBatch, newAppendBatchArgs, MultiPartition())
		} else {
			err = Register(reg, builtin.StreamAppendBatch, streamAppendBatch, MultiPartition())
		}
		if err != nil {
			t.Fatal(err)
		}
		eng, err := partition.NewEngine(partition.Config{Partitions: parts}, reg.NewHandler)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(eng.Close)
		return eng
	}
	engines := [2]*partition.Engine{build(true), build(false)}
	create, _ := msgpack.Marshal(builtin.StreamDefinition{Name: "s"})
	rng := rand.New(rand.NewPCG(3, 4))
	var ok int
	for i := range 3000 {
		in := partition.Input{Procedure: builtin.StreamAppendBatch, Scope: partition.AllPartitions(parts),
			Args: randomAppendBatchArgs(rng), Seq: uint64(i + 2), Time: 1_764_400_000_000_000_000}
		if i == 0 {
			in = partition.Input{Procedure: builtin.StreamCreate, Scope: partition.AllPartitions(parts), Args: create, Seq: 1}
		}
		if i%4 == 1 { // the stream the generator names most often does not exist: name "s"
			a := builtin.StreamAppendBatchArgs{Stream: "s"}
			for j := range rng.IntN(30) {
				a.Records = append(a.Records, builtin.StreamRecord{Key: fmt.Appendf(nil, "k%d", j), Value: []byte("v"), EventTime: int64(j)})
			}
			in.Args, _ = msgpack.Marshal(&a)
		}
		var res [2]partition.Result
		for e, eng := range engines {
			r := eng.Execute([]partition.Input{in})[0]
			res[e] = partition.Result{Value: bytes.Clone(r.Value), Err: r.Err}
		}
		if !bytes.Equal(res[0].Value, res[1].Value) || fmt.Sprint(res[0].Err) != fmt.Sprint(res[1].Err) {
			t.Fatalf("#%d: args %x: fast %x %v, reflective %x %v", i, in.Args, res[0].Value, res[0].Err, res[1].Value, res[1].Err)
		}
		if res[0].Err == nil {
			ok++
		}
		for p := range parts {
			if h0, h1 := engines[0].Partitions()[p].Hash(), engines[1].Partitions()[p].Hash(); h0 != h1 {
				t.Fatalf("#%d: partition %d: hash %x with the fast decoder, %x without", i, p, h0, h1)
			}
		}
	}
	if ok < 500 {
		t.Fatalf("only %d inputs succeeded: the test appends too little", ok)
	}
}
