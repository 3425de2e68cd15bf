package partition

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzRestore checks the snapshot decoder, which reads bytes from a peer or from disk:
// it never panics, fails only with ErrBadSnapshot and leaves the engine unchanged then,
// and what it accepts has consistent hashes and re-encodes to the same bytes.
func FuzzRestore(f *testing.F) {
	e, err := NewEngine(Config{Partitions: 1, Sequential: true}, streamProcs().handler)
	if err != nil {
		f.Fatal(err)
	}
	for _, cfg := range [][]byte{createArgs(0, 0, 0, false), createArgs(2, 9, 100, true)} {
		exec(e, Input{Procedure: "delete"}, Input{Procedure: "create", Scope: []int{0}, Args: cfg},
			Input{Procedure: "append", Args: []byte("a=1,b=2@7,a=3"), Time: ms(50)})
		var buf bytes.Buffer
		if _, err := e.Snapshot().WriteTo(&buf); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	e.Close()
	f.Add([]byte{2, 1, 0, 1})
	f.Add([]byte{1, 1, 0, 0})
	f.Add([]byte{2, 1, 0, 1, 1, 's', 0, 0, 0, 1, 5, 3, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		e := newEngine(t, Config{Partitions: 1, Sequential: true}, streamProcs())
		before := dump(e)
		if err := e.Restore(bytes.NewReader(data)); err != nil {
			if !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("got %v, want ErrBadSnapshot", err)
			}
			if dump(e) != before {
				t.Fatalf("a refused snapshot changed the engine")
			}
			return
		}
		checkHashes(t, e)
		var buf bytes.Buffer
		if _, err := e.Snapshot().WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		again := newEngine(t, Config{Partitions: 1, Sequential: true}, streamProcs())
		if err := again.Restore(bytes.NewReader(buf.Bytes())); err != nil || dump(again) != dump(e) {
			t.Fatalf("re-encoded snapshot: %v\n%s\nwant\n%s", err, dump(again), dump(e))
		}
	})
}
