package plan

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// appendRowMsgpack is the canonical encoding as the msgpack encoder writes it: the
// reference appendRowBytes must equal byte for byte.
func appendRowMsgpack(row []any) []byte {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	_ = enc.EncodeArrayLen(len(row))
	for _, v := range row {
		_ = encodeValue(enc, v)
	}
	return buf.Bytes()
}

var rowTypes = []Type{TypeBigint, TypeDouble, TypeText, TypeBytea, TypeBoolean, TypeTimestamp, TypeInterval}

// randomValue returns a value of t, near the encodings' size boundaries often.
func randomValue(rng *rand.Rand, t Type) any {
	if rng.IntN(8) == 0 {
		return nil
	}
	switch t {
	case TypeBigint, TypeTimestamp, TypeInterval:
		edges := []int64{0, 1, 31, 32, 127, 128, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64,
			-1, -32, -33, -128, -129, -32768, -32769, math.MinInt32, math.MinInt32 - 1, math.MinInt64}
		if rng.IntN(2) == 0 {
			return edges[rng.IntN(len(edges))] + int64(rng.IntN(3)) - 1
		}
		return int64(rng.Uint64()) >> rng.IntN(64)
	case TypeDouble:
		return []float64{0, math.Copysign(0, -1), 1.5, -3e300, math.Inf(1), math.NaN(), rng.NormFloat64()}[rng.IntN(7)]
	case TypeText:
		return string(randomBytes(rng))
	case TypeBytea:
		if rng.IntN(6) == 0 {
			return []byte(nil)
		}
		return randomBytes(rng)
	case TypeBoolean:
		return rng.IntN(2) == 0
	}
	panic(t)
}

func randomBytes(rng *rand.Rand) []byte {
	n := []int{0, 1, 31, 32, 255, 256, 65535, 65536, 70000}[rng.IntN(9)]
	if rng.IntN(2) == 0 {
		n = rng.IntN(40)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return b
}

// sameRow reports whether two decoded rows hold the same values of the same Go types
// (floats by their bits, so NaN equals itself).
func sameRow(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		switch x := a[i].(type) {
		case float64:
			y, ok := b[i].(float64)
			if !ok || math.Float64bits(x) != math.Float64bits(y) {
				return false
			}
		case []byte:
			y, ok := b[i].([]byte)
			if !ok || !bytes.Equal(x, y) || (x == nil) != (y == nil) {
				return false
			}
		default:
			if a[i] != b[i] {
				return false
			}
		}
	}
	return true
}

// TestRowBytesMatchMsgpack: the byte-level codec writes exactly what the msgpack encoder
// writes, and whatever it decodes — random rows, rows decoded under other types, all
// their truncations, byte flips, wider integer and float 32 encodings — the decoder
// path decodes to the same values; where it gives up, decodeRow is the decoder path.
func TestRowBytesMatchMsgpack(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fastOK := 0
	check := func(b []byte, types []Type) {
		t.Helper()
		fast, ok := decodeRowBytes(b, types, allCols)
		slow, _, reason := decodeRowMsgpack(b, types)
		if !ok {
			return
		}
		fastOK++
		if reason != "" || !sameRow(fast, slow) {
			t.Fatalf("% x as %v: bytes %v, decoder %v (%s)", b, types, fast, slow, reason)
		}
	}
	for range 3000 {
		types := make([]Type, rng.IntN(20))
		row := make([]any, len(types))
		for i := range types {
			types[i] = rowTypes[rng.IntN(len(rowTypes))]
			row[i] = randomValue(rng, types[i])
		}
		enc := appendRowBytes(nil, row)
		if want := appendRowMsgpack(row); !bytes.Equal(enc, want) {
			t.Fatalf("row %v: bytes % x, msgpack % x", row, enc, want)
		}
		if !bytes.Equal(AppendRow([]byte("x"), row), append([]byte("x"), enc...)) {
			t.Fatal("AppendRow does not append")
		}
		for i, v := range row {
			if !bytes.Equal(EncodeValue(v), appendRowMsgpack([]any{v})[1:]) {
				t.Fatalf("value %d %v: EncodeValue differs", i, v)
			}
		}
		if len(enc) < 200 {
			for n := range len(enc) {
				check(enc[:n], types)
			}
		}
		check(enc, types)
		other := append([]Type(nil), types...)
		if len(other) > 0 {
			other[rng.IntN(len(other))] = rowTypes[rng.IntN(len(rowTypes))]
			check(enc, other)
		}
		for range 5 {
			flipped := append([]byte(nil), enc...)
			if len(flipped) > 0 {
				flipped[rng.IntN(len(flipped))] ^= byte(1 << rng.IntN(8))
				check(flipped, types)
			}
		}
		check(append(enc, 0), types)
	}
	// Encodings the msgpack encoder never writes but the decoder takes.
	wide := [][]byte{
		{0x91, 0xd3, 0, 0, 0, 0, 0, 0, 0, 5},    // int64 5
		{0x91, 0xcf, 0, 0, 0, 0, 0, 0, 0, 5},    // uint64 5
		{0x91, 0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0}, // uint64 beyond int64
		{0x91, 0xd0, 0x05},                      // int8 5
		{0x91, 0xca, 0x3f, 0xc0, 0, 0},          // float 32 1.5
		{0xdc, 0, 1, 0x07},                      // array 16
		{0xdd, 0, 0, 0, 1, 0x07},                // array 32
		{0x91, 0xd9, 1, 'a'},                    // str 8, one byte
		{0x91, 0xc4, 0},                         // empty bin
		{0x91, 0xc0},                            // nil
	}
	for _, b := range wide {
		for _, typ := range rowTypes {
			check(b, []Type{typ})
		}
	}
	if fastOK < 3000 {
		t.Fatalf("the byte path decoded only %d rows", fastOK)
	}
	t.Logf("%d rows decoded by both paths alike", fastOK)
}

// TestMapBytesMatchMsgpack: map-layout records, in random column order with columns
// left out, truncated and flipped: what the byte path decodes, the decoder path decodes
// alike.
func TestMapBytesMatchMsgpack(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	fastOK := 0
	for range 2000 {
		s := &Schema{Name: "r", Key: -1, EventTime: -1, Layout: LayoutMap}
		for i := range 1 + rng.IntN(12) {
			s.Columns = append(s.Columns, Column{Name: string(rune('a' + i)), Type: rowTypes[rng.IntN(len(rowTypes))]})
		}
		var buf bytes.Buffer
		enc := msgpack.NewEncoder(&buf)
		order := rng.Perm(len(s.Columns))[:rng.IntN(len(s.Columns)+1)]
		_ = enc.EncodeMapLen(len(order))
		for _, i := range order {
			_ = enc.EncodeString(s.Columns[i].Name)
			_ = encodeValue(enc, randomValue(rng, s.Columns[i].Type))
		}
		b := buf.Bytes()
		inputs := [][]byte{b, append(append([]byte(nil), b...), 0)}
		for range 4 {
			flipped := append([]byte(nil), b...)
			flipped[rng.IntN(len(flipped))] ^= byte(1 << rng.IntN(8))
			inputs = append(inputs, flipped)
		}
		if len(b) < 200 {
			for n := range len(b) {
				inputs = append(inputs, b[:n])
			}
		}
		for _, in := range inputs {
			fast, ok := s.decodeMapBytes(in, allCols)
			slow, _, reason := s.decodeMapMsgpack(in)
			if !ok {
				continue
			}
			fastOK++
			if reason != "" || !sameRow(fast, slow) {
				t.Fatalf("% x: bytes %v, decoder %v (%s)", in, fast, slow, reason)
			}
		}
	}
	if fastOK < 2000 {
		t.Fatalf("the byte path decoded only %d records", fastOK)
	}
	t.Logf("%d records decoded by both paths alike", fastOK)
}
