package window

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"pgregory.net/rapid"
)

// int64s is a test state with a byte-level codec: msgpack's array of 9-byte int64s.
func appendInt64s(b []byte, s []int64) []byte {
	if s == nil {
		return append(b, 0xc0)
	}
	b = append(b, 0xdc, byte(len(s)>>8), byte(len(s)))
	if len(s) < 16 {
		b = append(b[:len(b)-3], 0x90|byte(len(s)))
	}
	for _, v := range s {
		b = binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(v))
	}
	return b
}

func decodeInt64s(b []byte) ([]int64, []byte, error) {
	if len(b) == 0 || b[0]&0xf0 != 0x90 {
		return nil, nil, errors.New("not a fixarray")
	}
	n := int(b[0] & 0x0f)
	b = b[1:]
	out := make([]int64, n)
	for i := range out {
		if len(b) < 9 || b[0] != 0xd3 {
			return nil, nil, errors.New("not an int64")
		}
		out[i], b = int64(binary.BigEndian.Uint64(b[1:9])), b[9:]
	}
	return out, b, nil
}

// TestValueCodecSameBytes: with AppendValue and DecodeValue the operator stores the
// bytes it stores without them (the envelope by hand, the value by the codec), and reads
// them back; bytes the codec refuses decode by reflection.
func TestValueCodecSameBytes(t *testing.T) {
	a, err := New(Config[int64, []int64]{Name: "w", Assigner: Tumbling{10}, Init: func() []int64 { return nil },
		Add: func(s []int64, v int64) []int64 { return append(s, v) }, Emit: func(*partition.Tx, Result[[]int64]) error { return nil },
		AppendValue: appendInt64s, DecodeValue: decodeInt64s})
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(t *rapid.T) {
		st := windowState[[]int64]{End: rapid.Int64().Draw(t, "end"), Emitted: rapid.IntRange(0, 1<<33).Draw(t, "emitted"),
			Value: rapid.SliceOfN(rapid.Int64(), 0, 20).Draw(t, "value")}
		c := stateCodecs.Get().(*stateCodec)
		defer stateCodecs.Put(c)
		want, err := encodeState(c, &st, false)
		if err != nil {
			t.Fatal(err)
		}
		want = bytes.Clone(want)
		got := appendInt64s(appendEnvelope(nil, st.End, st.Emitted), st.Value)
		if !bytes.Equal(got, want) {
			t.Fatalf("%+v: codec %x, msgpack %x", st, got, want)
		}
		var back windowState[[]int64]
		if err := a.decodeState(got, &back); err != nil || back.End != st.End || back.Emitted != st.Emitted || len(back.Value) != len(st.Value) ||
			(len(st.Value) > 0 && !reflect.DeepEqual(back.Value, st.Value)) {
			t.Fatalf("decodeState(%x) = %+v, %v; want %+v", got, back, err, st)
		}
	})
}

func TestValueCodecValidate(t *testing.T) {
	_, err := New(Config[int64, []int64]{Name: "w", Assigner: Tumbling{10}, Init: func() []int64 { return nil },
		Add: func(s []int64, v int64) []int64 { return s }, Emit: func(*partition.Tx, Result[[]int64]) error { return nil },
		AppendValue: appendInt64s})
	if !errors.Is(err, ErrBadConfig) {
		t.Fatalf("AppendValue without DecodeValue: %v", err)
	}
}
