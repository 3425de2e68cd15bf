package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

var errFill = errors.New("fill refused")

// TestTxUpdate: Tx.Update (one descent on an existing table) leaves exactly the state,
// hash and results that Get then Put leave, over random adds to a few keys in a plain, a
// replicated and a changelog table, with fills that fail or panic and procedures that
// fail after an Update (all of which must change nothing, DESIGN.md invariant 2).
func TestTxUpdate(t *testing.T) {
	const parts = 2
	// add: args = mode byte, delta byte; the table and key come from the input's key.
	add := func(useUpdate bool) func(tx *Tx, in *Input, out []byte) ([]byte, error) {
		return func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			mode, delta := in.Args[0], uint64(in.Args[1])
			table := map[byte]string{'t': "t", 'r': "rep", 'c': "cl"}[in.Key[0]]
			fill := func(dst, old []byte, found bool) error {
				var cur uint64
				if found {
					cur = binary.BigEndian.Uint64(old)
				}
				switch mode {
				case 'e':
					return errFill
				case 'p':
					panic("fill panics")
				}
				binary.BigEndian.PutUint64(dst, cur+delta)
				return nil
			}
			var err error
			if useUpdate {
				err = tx.Update(table, in.Key, 8, fill)
			} else {
				old, found := tx.Get(table, in.Key)
				dst := make([]byte, 8)
				if err = fill(dst, old, found); err == nil {
					err = tx.Put(table, in.Key, dst)
				}
			}
			if err == nil && mode == 'f' {
				err = errHandler // the procedure fails after its write
			}
			if v, ok := tx.Get(table, in.Key); ok {
				out = append(out, v...)
			}
			return out, err
		}
	}
	setup := func(tx *Tx, in *Input, out []byte) ([]byte, error) {
		return out, tx.CreateStream("cl-changes", StreamConfig{})
	}
	cfg := Config{Partitions: parts, ReplicatedTables: []string{"rep"}, Changelogs: map[string]string{"cl": "cl-changes"}}
	engines := [2]*Engine{
		newEngine(t, cfg, procs{"add": add(true), "setup": setup}),
		newEngine(t, cfg, procs{"add": add(false), "setup": setup}),
	}
	for _, e := range engines {
		if r := run1(e, Input{Procedure: "setup", Scope: AllPartitions(parts)}); r.Err != "" {
			t.Fatal(r.Err)
		}
	}
	rng := rand.New(rand.NewPCG(3, 5))
	var failed int
	for i := range 3000 {
		key := fmt.Appendf(nil, "%c%d", "ttttttrc"[rng.IntN(8)], rng.IntN(12))
		mode := "oooooefp"[rng.IntN(8)]
		in := Input{Procedure: "add", Key: key, Args: []byte{mode, byte(rng.IntN(200))}, Seq: uint64(i + 2)}
		if key[0] == 'r' {
			in.Scope = AllPartitions(parts)
		} else {
			in.Partition = PartitionOf(key, parts)
		}
		var res [2]result
		for j, e := range engines {
			res[j] = run1(e, in)
		}
		if res[0].String() != res[1].String() {
			t.Fatalf("#%d %s mode %c: Update gives %v, Get and Put give %v", i, key, mode, res[0], res[1])
		}
		if res[0].Err != "" {
			failed++
		}
		if i%50 == 0 || mode != 'o' {
			if d0, d1 := dump(engines[0]), dump(engines[1]); d0 != d1 {
				t.Fatalf("#%d %s mode %c: state after Update:\n%s\nafter Get and Put:\n%s", i, key, mode, d0, d1)
			}
		}
	}
	if failed < 500 {
		t.Fatalf("only %d inputs failed: the test does not exercise undo", failed)
	}
}

// TestTxUpdateErrors: a fill error is returned as is; a bad table name, a value too large
// and a read-only transaction are refused before fill runs, changing nothing.
func TestTxUpdateErrors(t *testing.T) {
	var got []error
	fills := 0
	fill := func(dst, old []byte, found bool) error { fills++; return nil }
	e := newEngine(t, Config{Partitions: 1}, procs{"u": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
		got = append(got,
			tx.Update("t", []byte("k"), 1, func(dst, old []byte, found bool) error { return errFill }),
			tx.Update("", []byte("k"), 1, fill),
			tx.Update("t", []byte("k"), MaxValueBytes+1, fill),
			tx.Update("t", nil, 1, fill),
		)
		return out, nil
	}})
	before := dump(e)
	if r := run1(e, Input{Procedure: "u", Key: []byte("k")}); r.Err != "" {
		t.Fatal(r.Err)
	}
	want := []error{errFill, ErrBadName, ErrValueTooLarge, ErrEmptyKey}
	for i := range want {
		if !errors.Is(got[i], want[i]) {
			t.Errorf("Update #%d: %v, want %v", i, got[i], want[i])
		}
	}
	if fills != 0 {
		t.Errorf("fill ran %d times for refused Updates", fills)
	}
	if after := dump(e); after != before {
		t.Errorf("refused Updates changed the state:\n%s\nwas:\n%s", after, before)
	}
}
