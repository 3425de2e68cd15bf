package procedures

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/lockstepdb/lockstep/internal/canon"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// TestMapResultsCanonical: a procedure whose result holds maps encodes it in one byte order
// on every run. Results are cached in the replicated session table and hashed (DESIGN.md
// invariant 1); msgpack/v5 writes most map types in Go's random iteration order, which
// made replicas' meta hashes differ and marked healthy replicas divergent.
func TestMapResultsCanonical(t *testing.T) {
	type nested struct {
		Counts map[string]int64
		Tags   []map[int]string
	}
	te := newTestEngine(t, 1, func(r *Registry) {
		MustRegister(r, "t.counts", func(tx *partition.Tx, _ builtin.NoArgs) (nested, error) {
			n := nested{Counts: map[string]int64{}, Tags: []map[int]string{{}}}
			for i := range 64 {
				n.Counts[string(rune('a'+i%26))+string(rune('a'+i/26))] = int64(i)
				n.Tags[0][i] = string(rune('A' + i%26))
			}
			return n, nil
		})
	})
	var first []byte
	for i := range 20 {
		b, err := te.exec(te.input("t.counts", "k", nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = append([]byte(nil), b...)
			got := decode[nested](t, b)
			if len(got.Counts) != 64 || got.Counts["ab"] != 26 || got.Tags[0][3] != "D" {
				t.Fatalf("decoded %+v", got)
			}
			continue
		}
		if !bytes.Equal(b, first) {
			t.Fatalf("#%d: result bytes differ between runs", i)
		}
	}
}

// TestMayHoldMap: the built-ins' results need no rewriting (their hot path stays as it
// was); maps, interfaces and custom encoders do.
func TestMayHoldMap(t *testing.T) {
	for i, tc := range []struct {
		typ  reflect.Type
		want bool
	}{
		{reflect.TypeFor[int64](), false},
		{reflect.TypeFor[builtin.KVGetResult](), false},
		{reflect.TypeFor[[]builtin.ContestantTotal](), false},
		{reflect.TypeFor[map[string]int](), true},
		{reflect.TypeFor[any](), true},
		{reflect.TypeFor[struct{ M *map[int]int }](), true},
		{reflect.TypeFor[[]struct{ X []any }](), true},
	} {
		if got := canon.MayHoldMap(tc.typ); got != tc.want {
			t.Errorf("#%d: %v: got %v, want %v", i, tc.typ, got, tc.want)
		}
	}
}
