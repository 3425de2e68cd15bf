package partition

import (
	"errors"
	"fmt"
	"testing"
)

// TestQuery checks read-only queries: they read committed state on every partition in
// scope, any write fails with ErrReadOnlyTx and changes nothing, a bad scope is
// ErrBadScope, and a panic is a PanicError.
func TestQuery(t *testing.T) {
	ps := procs{
		"put": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			if err := tx.Put("t", in.Key, in.Args); err != nil {
				return out, err
			}
			_, err := testAppend(tx, "s", in.Args)
			return out, err
		},
		"read": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			for _, p := range tx.Scope() {
				v, err := tx.On(p)
				if err != nil {
					return out, err
				}
				val, ok := v.Get("t", in.Key)
				out = fmt.Appendf(out, "%d:%s/%t/%d ", p, val, ok, v.StreamLen("s"))
			}
			return out, nil
		},
		"write": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			errs := []error{
				tx.Put("t", in.Key, []byte("query")),
				tx.Delete("t", in.Key),
				func() error { _, err := testAppend(tx, "s", nil); return err }(),
			}
			for i, err := range errs {
				if !errors.Is(err, ErrReadOnlyTx) {
					return out, fmt.Errorf("write %d: got %v, want %v", i, err, ErrReadOnlyTx)
				}
			}
			return append(out, "refused"...), nil
		},
		"panic": func(tx *Tx, in *Input, out []byte) ([]byte, error) { panic("query panic") },
	}
	e := newEngine(t, Config{Partitions: 3}, ps)
	for p := range 3 {
		if err := runErr(e, Input{Procedure: "put", Key: []byte("k"), Args: fmt.Appendf(nil, "v%d", p), Partition: p}); err != nil {
			t.Fatal(err)
		}
	}
	before := dump(e)
	h := ps.handler()
	tests := []struct {
		in      Input
		want    string
		wantErr error
	}{
		{Input{Procedure: "read", Key: []byte("k"), Partition: 1}, "1:v1/true/1 ", nil},
		{Input{Procedure: "read", Key: []byte("k"), Scope: []int{0, 2}}, "0:v0/true/1 2:v2/true/1 ", nil},
		{Input{Procedure: "read", Key: []byte("x"), Scope: AllPartitions(3)}, "0:/false/1 1:/false/1 2:/false/1 ", nil},
		{Input{Procedure: "write", Key: []byte("k"), Partition: 0}, "refused", nil},
		{Input{Procedure: "write", Key: []byte("new"), Scope: AllPartitions(3)}, "refused", nil},
		{Input{Procedure: "read", Partition: 3}, "", ErrBadScope},
		{Input{Procedure: "read", Partition: -1}, "", ErrBadScope},
		{Input{Procedure: "read", Scope: []int{}}, "", ErrBadScope},
		{Input{Procedure: "read", Scope: []int{2, 1}}, "", ErrBadScope},
		{Input{Procedure: "panic", Partition: 0}, "", ErrPanic},
	}
	for i, tt := range tests {
		r := e.Query(&tt.in, h)
		if tt.wantErr != nil {
			if !errors.Is(r.Err, tt.wantErr) {
				t.Errorf("#%d %+v: got %v, want %v", i, tt.in, r.Err, tt.wantErr)
			}
			continue
		}
		if r.Err != nil || string(r.Value) != tt.want {
			t.Errorf("#%d %+v: got %q, %v, want %q", i, tt.in, r.Value, r.Err, tt.want)
		}
	}
	if after := dump(e); after != before {
		t.Errorf("queries changed state:\n%s\nwant\n%s", after, before)
	}
	// A query's result belongs to the caller: executing more inputs does not change it.
	r := e.Query(&Input{Procedure: "read", Key: []byte("k"), Partition: 0}, h)
	for range 10 {
		exec(e, Input{Procedure: "put", Key: []byte("k"), Args: []byte("overwritten"), Partition: 0})
	}
	if string(r.Value) != "0:v0/true/1 " {
		t.Errorf("query result changed to %q", r.Value)
	}
}
