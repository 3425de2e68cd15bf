package canon

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// decoderMsgpack is the decoder-based rewriting Msgpack replaced (issue 24 item 2): the
// oracle. Its bytes are what replicas stored and hashed, so the byte-level one must
// write exactly them.
func decoderMsgpack(dst, b []byte) ([]byte, error) {
	return decoderValue(msgpack.NewDecoder(bytes.NewReader(b)), dst, len(b))
}

// decoderValue is the old canonValue, but for a map count above the input's size it
// fails at once: the old one allocated the count's entries first (a flipped byte made it
// run out of memory) and then failed at the end of the input.
func decoderValue(d *msgpack.Decoder, out []byte, size int) ([]byte, error) {
	c, err := d.PeekCode()
	if err != nil {
		return nil, err
	}
	switch {
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		n, err := d.DecodeMapLen()
		if err != nil {
			return nil, err
		}
		if n > size {
			return nil, errors.New("map count above input size")
		}
		type entry struct{ k, v []byte }
		entries := make([]entry, n)
		for i := range entries {
			if entries[i].k, err = decoderValue(d, nil, size); err != nil {
				return nil, err
			}
			if entries[i].v, err = decoderValue(d, nil, size); err != nil {
				return nil, err
			}
		}
		slices.SortFunc(entries, func(a, b entry) int { return bytes.Compare(a.k, b.k) })
		out = appendLen(out, n, msgpcode.FixedMapLow, msgpcode.Map16, msgpcode.Map32)
		for _, e := range entries {
			out = append(append(out, e.k...), e.v...)
		}
		return out, nil
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		n, err := d.DecodeArrayLen()
		if err != nil {
			return nil, err
		}
		out = appendLen(out, n, msgpcode.FixedArrayLow, msgpcode.Array16, msgpcode.Array32)
		for range n {
			if out, err = decoderValue(d, out, size); err != nil {
				return nil, err
			}
		}
		return out, nil
	default:
		raw, err := d.DecodeRaw()
		return append(out, raw...), err
	}
}

type point struct {
	Zeta  int64             `msgpack:"zeta"`
	Alpha string            `msgpack:"alpha"`
	B     []byte            `msgpack:"b"`
	M     map[string]uint16 `msgpack:"m,omitempty"`
}

// randValue is a random value of the kinds msgpack encodes: scalars of every width,
// strings and binaries of every length class, times (an extension), structs, and maps
// and arrays of every header size, nested.
func randValue(r *rand.Rand, depth int) any {
	k := r.IntN(14)
	if depth > 3 {
		k = r.IntN(8)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return r.Int64() >> r.IntN(64)
	case 3:
		return -(r.Int64() >> r.IntN(64))
	case 4:
		return r.Float64()
	case 5:
		return float32(r.Float64())
	case 6:
		if depth == 0 && r.IntN(4) == 0 {
			return string(make([]byte, 70000)) // a str32
		}
		return string(make([]byte, []int{0, 5, 31, 32, 300}[r.IntN(5)]))
	case 7:
		if depth == 0 && r.IntN(4) == 0 {
			return make([]byte, 70000) // a bin32
		}
		return make([]byte, []int{0, 3, 255, 256}[r.IntN(4)])
	case 8:
		return time.Unix(r.Int64N(1<<40), r.Int64N(1e9))
	case 9:
		return point{Zeta: r.Int64(), Alpha: "a", B: []byte{1}, M: map[string]uint16{"q": 1, "aa": 2, "b": 3}}
	case 10, 11:
		n := []int{0, 3, 15, 16, 40}[r.IntN(5)]
		m := map[string]any{}
		for range n {
			m[string(rune('a'+r.IntN(26)))+string(rune('a'+r.IntN(26)))] = randValue(r, depth+1)
		}
		return m
	case 12:
		m := map[int64]any{}
		for range r.IntN(20) {
			m[r.Int64N(1000)-500] = randValue(r, depth+1)
		}
		return m
	default:
		a := make([]any, []int{0, 2, 15, 16, 20}[r.IntN(5)])
		for i := range a {
			a[i] = randValue(r, depth+1)
		}
		return a
	}
}

// TestMsgpackMatchesDecoder: on random values, and on every truncation and some byte
// flips of them, the byte-level rewriting gives the decoder-based one's bytes, or fails
// where it fails.
func TestMsgpackMatchesDecoder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 800 {
		b, err := msgpack.Marshal(randValue(r, 0))
		if err != nil {
			t.Fatal(err)
		}
		inputs := [][]byte{b, append(slices.Clone(b), 0xc0, 0x01)}
		for n := 0; n < len(b); n += 1 + n/64 {
			inputs = append(inputs, b[:n])
		}
		for range 4 {
			f := slices.Clone(b)
			f[r.IntN(len(f))] = byte(r.IntN(256))
			inputs = append(inputs, f)
		}
		for _, in := range inputs {
			want, werr := decoderMsgpack([]byte("pre"), in)
			if werr != nil {
				want = nil // Msgpack returned nothing with its error
			}
			got, gerr := Msgpack([]byte("pre"), in)
			if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
				t.Fatalf("value %d, input %x:\n got %x, %v\nwant %x, %v", i, in, got, gerr, want, werr)
			}
		}
	}
}

func TestMsgpackMalformed(t *testing.T) {
	for _, in := range [][]byte{nil, {0xc1}, {0x82, 0xa1}, {0xdf, 0xff, 0xff, 0xff, 0xff}, {0xdb, 0, 0, 0, 9, 1}} {
		out, err := Msgpack([]byte("keep"), in)
		if err == nil || out != nil {
			t.Errorf("Msgpack(%x) = %x, %v; want ErrMalformed", in, out, err)
		}
	}
}

func BenchmarkMsgpack(b *testing.B) {
	v, _ := msgpack.Marshal(struct {
		Price int64
		Bids  []point
	}{7, []point{{Zeta: 1, Alpha: "x"}, {Zeta: 2, Alpha: "y"}, {Zeta: 3}}})
	var dst []byte
	for b.Loop() {
		dst, _ = Msgpack(dst[:0], v)
	}
}

func BenchmarkDecoderMsgpack(b *testing.B) {
	v, _ := msgpack.Marshal(struct {
		Price int64
		Bids  []point
	}{7, []point{{Zeta: 1, Alpha: "x"}, {Zeta: 2, Alpha: "y"}, {Zeta: 3}}})
	var dst []byte
	for b.Loop() {
		dst, _ = decoderMsgpack(dst[:0], v)
	}
}
