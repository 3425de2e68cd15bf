package plan

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/lockstepdb/lockstep/internal/canon"
	"github.com/vmihailenco/msgpack/v5"
	"pgregory.net/rapid"
)

// TestAggStatesMatchCanonical: appendAggStates writes what the window operator stored by
// reflection (msgpack.Marshal, then canon.Msgpack) for any []AggState, and
// decodeAggStates reads it back as msgpack.Unmarshal does; a cut or changed value is
// refused or read as msgpack reads it.
func TestAggStatesMatchCanonical(t *testing.T) {
	bin := func(t *rapid.T, label string) []byte {
		if rapid.IntRange(0, 3).Draw(t, label+"nil") == 0 {
			return nil
		}
		return rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, label)
	}
	rapid.Check(t, func(t *rapid.T) {
		var sts []AggState
		if rapid.IntRange(0, 5).Draw(t, "nil") > 0 {
			sts = make([]AggState, rapid.IntRange(0, 18).Draw(t, "n"))
		}
		for i := range sts {
			st := &sts[i]
			st.N, st.I, st.F = rapid.Int64().Draw(t, "N"), rapid.Int64().Draw(t, "I"), rapid.Float64().Draw(t, "F")
			st.Best, st.Overflow = bin(t, "best"), rapid.Bool().Draw(t, "overflow")
			if rapid.Bool().Draw(t, "distinct") {
				st.Distinct = make([][]byte, rapid.IntRange(0, 17).Draw(t, "nd"))
				for j := range st.Distinct {
					st.Distinct[j] = bin(t, "d")
				}
			}
		}
		m, err := msgpack.Marshal(sts)
		if err != nil {
			t.Fatal(err)
		}
		want, err := canon.Msgpack(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		got := appendAggStates(nil, sts)
		if !bytes.Equal(got, want) {
			t.Fatalf("appendAggStates = %x, canonical msgpack %x", got, want)
		}
		var slow []AggState
		if err := msgpack.Unmarshal(got, &slow); err != nil {
			t.Fatal(err)
		}
		fast, rest, err := decodeAggStates(got)
		if err != nil || len(rest) != 0 || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("decodeAggStates(%x) = %+v, %x, %v; msgpack %+v", got, fast, rest, err, slow)
		}
		b := bytes.Clone(got)
		if i := rapid.IntRange(0, len(b)-1).Draw(t, "at"); rapid.Bool().Draw(t, "cut") {
			b = b[:i]
		} else {
			b[i] ^= byte(rapid.IntRange(1, 255).Draw(t, "xor"))
		}
		if fast, rest, err := decodeAggStates(b); err == nil && len(rest) == 0 {
			var slow []AggState
			if err := msgpack.Unmarshal(b, &slow); err != nil || !reflect.DeepEqual(fast, slow) {
				t.Fatalf("damaged %x: decodeAggStates %+v; msgpack %+v, %v", b, fast, slow, err)
			}
		}
	})
}
