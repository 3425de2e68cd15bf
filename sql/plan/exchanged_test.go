package plan

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
	"pgregory.net/rapid"
)

// TestExchangedMatchesMsgpack: marshalExchanged writes msgpack.Marshal's bytes for any
// exchange record, unmarshalExchanged reads them back as msgpack.Unmarshal does, and a
// cut or changed record decodes as msgpack decodes it, or fails as it does.
func TestExchangedMatchesMsgpack(t *testing.T) {
	bin := func(t *rapid.T, label string) []byte {
		if rapid.IntRange(0, 4).Draw(t, label+"nil") == 0 {
			return nil
		}
		if rapid.IntRange(0, 8).Draw(t, label+"big") == 0 {
			return bytes.Repeat([]byte{7}, rapid.SampledFrom([]int{255, 256, 65535, 65536}).Draw(t, label+"len"))
		}
		return rapid.SliceOf(rapid.Byte()).Draw(t, label)
	}
	rapid.Check(t, func(t *rapid.T) {
		x := exchanged{Stamp: rapid.Int64().Draw(t, "stamp"), Key: bin(t, "key"), Off: rapid.Uint64().Draw(t, "off"),
			Row: bin(t, "row"), Side: rapid.Byte().Draw(t, "side"), Neg: rapid.Bool().Draw(t, "neg")}
		want, err := msgpack.Marshal(&x)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := marshalExchanged(&x)
		if !bytes.Equal(got, want) {
			t.Fatalf("marshalExchanged(%+v) = %x, msgpack writes %x", x, got, want)
		}
		var back exchanged
		if err := unmarshalExchanged(got, &back); err != nil || !reflect.DeepEqual(back, x) {
			t.Fatalf("unmarshalExchanged(%x) = %+v, %v; want %+v", got, back, err, x)
		}
		b := append([]byte(nil), got...)
		if i := rapid.IntRange(0, len(b)-1).Draw(t, "at"); rapid.Bool().Draw(t, "cut") {
			b = b[:i]
		} else {
			b[i] ^= byte(rapid.IntRange(1, 255).Draw(t, "xor"))
		}
		var fast, slow exchanged
		errFast, errSlow := unmarshalExchanged(b, &fast), msgpack.Unmarshal(b, &slow)
		if (errFast == nil) != (errSlow == nil) || (errFast == nil && !reflect.DeepEqual(fast, slow)) {
			t.Fatalf("damaged %x: unmarshalExchanged %+v, %v; msgpack %+v, %v", b, fast, errFast, slow, errSlow)
		}
	})
}
