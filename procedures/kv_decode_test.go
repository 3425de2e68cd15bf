package procedures

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/procedures/schema"
	"github.com/vmihailenco/msgpack/v5"
)

// reflectKVPut decodes raw as the runner decodes arguments without a fastCodec.
func reflectKVPut(raw []byte) (builtin.KVPutArgs, error) {
	var a builtin.KVPutArgs
	rd := bytes.NewReader(raw)
	if err := msgpack.NewDecoder(rd).Decode(&a); err != nil {
		return a, err
	}
	if rd.Len() > 0 {
		return a, fmt.Errorf("trailing bytes")
	}
	return a, nil
}

// checkKVPutDecoder fails t if the fast decoder of kv.put accepts raw while the
// reflective decoder refuses it, or decodes it to another value (nil and empty told
// apart); it reports whether the fast decoder accepted raw.
func checkKVPutDecoder(t testing.TB, raw []byte) bool {
	t.Helper()
	var got builtin.KVPutArgs
	ok := newKVPutArgs().decode(raw, &got)
	if schema.CheckMsgpack(raw) != nil {
		return false // the runner refuses these before any decoder sees them
	}
	want, err := reflectKVPut(raw)
	switch {
	case ok && err != nil:
		t.Fatalf("args %.200x: the fast decoder accepts %.100x, the reflective decoder refuses: %v", raw, got.Value, err)
	case ok && !reflect.DeepEqual(got, want):
		t.Fatalf("args %.200x: fast decoder %#v, reflective decoder %#v", raw, got.Value, want.Value)
	}
	return ok
}

// randomKVPutArgs returns kv.put arguments in the encodings msgpack allows for bytes,
// with other field names, value types, extra fields, truncations and trailing bytes.
func randomKVPutArgs(rng *rand.Rand) []byte {
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
		b = append(b, 0x91)
	default:
		b = append(b, 0x80|byte(fields))
	}
	for range fields {
		switch rng.IntN(10) {
		case 0:
			b = append(b, 0xa1, 'x')
		case 1:
			b = append(b, 0xd9, 1, 'v')
		default:
			b = append(b, 0xa1, 'v')
		}
		v := make([]byte, rng.IntN(300))
		for i := range v {
			v[i] = byte(rng.IntN(256))
		}
		n := len(v)
		switch rng.IntN(10) {
		case 0:
			b = append(b, 0xc0)
		case 1:
			b = append(b, 0xa0|byte(n&0x1f))
			v = v[:n&0x1f]
		case 2:
			b = append(b, 0xd9, byte(n))
		case 3:
			b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
		case 4:
			b = binary.BigEndian.AppendUint16(append(b, 0xc5), uint16(n))
		case 5:
			b = binary.BigEndian.AppendUint32(append(b, 0xc6), uint32(n))
		case 6:
			b = append(b, 0x05) // an integer
			v = nil
		default:
			b = append(b, 0xc4, byte(n))
		}
		b = append(b, v...)
	}
	if rng.IntN(20) == 0 {
		b = append(b, 0x01)
	}
	if rng.IntN(20) == 0 && len(b) > 0 {
		b = b[:rng.IntN(len(b))]
	}
	return b
}

// TestKVPutDecoderAgrees is the property test of kv.put's fast decoder: it accepts only
// what the reflective decoder accepts, decodes it to the same value, and takes what the Go
// client sends itself.
func TestKVPutDecoderAgrees(t *testing.T) {
	checkDecoderAgrees(t, rand.NewPCG(11, 12), randomKVPutArgs, checkKVPutDecoder, reflectKVPut)
	for _, v := range [][]byte{nil, {}, []byte("x"), make([]byte, 100), make([]byte, 70000)} {
		raw, err := msgpack.Marshal(builtin.KVPutArgs{Value: v})
		if err != nil {
			t.Fatal(err)
		}
		if !checkKVPutDecoder(t, raw) {
			t.Errorf("%.40x: the fast decoder declines what the client sends", raw)
		}
	}
	for _, b := range []bool{false, true} {
		raw, _ := msgpack.Marshal(b)
		if got := newKVPutArgs().appendResult(nil, b); !bytes.Equal(got, raw) {
			t.Errorf("result %v: encoded %x, msgpack %x", b, got, raw)
		}
	}
}

// FuzzKVPutArgs: for any bytes, the fast decoder of kv.put accepts only what the
// reflective decoder accepts, and decodes it to the same value.
func FuzzKVPutArgs(f *testing.F) {
	rng := rand.New(rand.NewPCG(13, 14))
	for range 40 {
		f.Add(randomKVPutArgs(rng))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkKVPutDecoder(t, raw) })
}

// TestKVPutFastEngineAgrees runs the same kv.put inputs, valid and broken, with and
// without the fast codec: results, errors and partition hashes must be identical.
func TestKVPutFastEngineAgrees(t *testing.T) {
	checkEnginesAgree(t, builtin.KVPut, "k", 3000, randomKVPutArgs, 2,
		func(reg *Registry) error { return register(reg, builtin.KVPut, kvPut, newKVPutArgs) },
		func(reg *Registry) error { return Register(reg, builtin.KVPut, kvPut) })
}
