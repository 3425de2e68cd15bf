package procedures

import (
	"errors"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

var errTest = errors.New("test failure")

// registerFailing adds procedures that change every kind of state and then fail: by
// returning an error, by panicking, and the same across partitions.
func registerFailing(r *Registry) {
	touch := func(tx *partition.Tx) {
		for _, err := range []error{
			tx.Put(KVTable, []byte("x"), []byte("overwritten")), // existing row
			tx.Put(KVTable, []byte("new"), []byte("row")),       // new row
			tx.Delete(CounterTable, []byte("y")),                // existing row, maybe
			tx.Put("test.fresh", []byte("k"), []byte("v")),      // new table
			tx.Delete("test.fresh2", []byte("k")),               // new table, no row
		} {
			if err != nil {
				panic(err)
			}
		}
		if _, err := tx.Append("s", []byte("k"), []byte("rec"), 0); err != nil {
			panic(err)
		}
		if err := tx.CreateStream("test.fresh", partition.StreamConfig{}); err != nil {
			panic(err)
		}
		if _, err := tx.Append("test.fresh", []byte("k"), []byte("rec"), 0); err != nil {
			panic(err)
		}
	}
	MustRegister(r, "test.fail", func(tx *partition.Tx, _ builtin.NoArgs) (bool, error) {
		touch(tx)
		return false, errTest
	})
	MustRegister(r, "test.panic", func(tx *partition.Tx, _ builtin.NoArgs) (bool, error) {
		touch(tx)
		panic("after writing")
	})
	MustRegister(r, "test.multi_fail", func(tx *partition.Tx, _ builtin.NoArgs) (bool, error) {
		for _, p := range tx.Scope() {
			v, err := tx.On(p)
			if err != nil {
				return false, err
			}
			touch(v)
		}
		if err := tx.Put(VoterConfigTable, []byte("config"), []byte("garbage")); err != nil {
			return false, err
		}
		return false, errTest
	}, MultiPartition())
	MustRegister(r, "test.ro_write", func(tx *partition.Tx, _ builtin.NoArgs) (bool, error) {
		touch(tx)
		return true, nil
	}, ReadOnly())
}

// TestAtomicEffects checks DESIGN.md invariant 2: an input that fails or panics after
// writing rows, creating tables and appending records leaves no trace but its error.
func TestAtomicEffects(t *testing.T) {
	for _, sequential := range []bool{false, true} {
		te := newTestEngineConfig(t, partition.Config{Partitions: 3, Sequential: sequential}, registerFailing)
		seed(t, te)
		tests := []struct {
			proc    string
			key     string
			wantErr error
		}{
			{"test.fail", "x", errTest},
			{"test.fail", "y", ErrProcedure},
			{"test.panic", "x", partition.ErrPanic},
			{"test.panic", "z", partition.ErrPanic},
			{"test.multi_fail", "", errTest},
			{"test.ro_write", "x", ErrReadOnly},
		}
		for i, tt := range tests {
			before := te.snapshot(t)
			_, err := te.exec(te.input(tt.proc, tt.key, nil, nil))
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("#%d %s (sequential %t): got error %v, want %v", i, tt.proc, sequential, err, tt.wantErr)
			}
			if after := te.snapshot(t); !after.same(before) {
				t.Errorf("#%d %s (sequential %t): got state\n%s\nwant\n%s", i, tt.proc, sequential, after.dump, before.dump)
			}
		}
		// Results of later inputs are unaffected.
		if got := mustInvoke[builtin.KVGetResult](t, te, "kv.get", "x", nil); string(got.Value) != "\x00" {
			t.Errorf("kv.get x after failures: got %q, want %q", got.Value, "\x00")
		}
	}
}
