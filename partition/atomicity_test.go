package partition

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

var errHandler = errors.New("handler gave up")

// mutateAll makes every kind of change a Tx can make on its partition: overwrite, insert,
// delete, a put into a table that did not exist, appends to an existing and a new stream,
// and (when the input reaches every partition) a replicated-table write. It also writes
// some result bytes that must be discarded.
func mutateAll(tx *Tx, out []byte) ([]byte, error) {
	out = append(out, "partial result"...)
	steps := []func() error{
		func() error { return tx.Put("t", []byte("a"), []byte("changed")) },
		func() error { return tx.Put("t", []byte("new"), []byte("inserted")) },
		func() error { return tx.Delete("t", []byte("b")) },
		func() error { return tx.Put("t", []byte("new"), []byte("inserted twice")) },
		func() error { return tx.Delete("t", []byte("new")) },
		func() error { return tx.Put("t", []byte("new"), []byte("inserted thrice")) },
		func() error { return tx.Put("fresh", []byte("k"), []byte("v")) },
		func() error { return tx.Delete("fresh2", []byte("k")) },
		func() error { _, err := testAppend(tx, "s", []byte("appended")); return err },
		func() error { _, err := testAppend(tx, "fresh-stream", []byte("appended")); return err },
	}
	if len(tx.Scope()) == tx.Partitions() {
		steps = append(steps,
			func() error { return tx.Put("rep", []byte("a"), []byte("changed")) },
			func() error { return tx.Delete("rep", []byte("b")) },
			func() error { return tx.Put("rep", []byte("c"), []byte("new")) },
		)
	}
	for i, s := range steps {
		if err := s(); err != nil {
			return out, fmt.Errorf("step %d: %w", i, err)
		}
	}
	return out, nil
}

// TestAtomicity checks DESIGN.md invariant 2: an input whose procedure returns an error or
// panics leaves no trace but its error result. Tables (including which tables exist),
// streams, Hash() and RecomputeHash() are exactly as before, on every partition it reached,
// and other inputs of the same batch keep their effects.
func TestAtomicity(t *testing.T) {
	seed := func(tx *Tx, in *Input, out []byte) ([]byte, error) {
		for _, k := range []string{"a", "b"} {
			if err := tx.Put("t", []byte(k), []byte("seed-"+k)); err != nil {
				return out, err
			}
			if _, err := testAppend(tx, "s", []byte("seed-"+k)); err != nil {
				return out, err
			}
		}
		return out, nil
	}
	// onEach applies f to the view of every partition in scope, lowest first.
	onEach := func(tx *Tx, out []byte, f func(*Tx, []byte) ([]byte, error)) ([]byte, error) {
		for _, p := range tx.Scope() {
			v, err := tx.On(p)
			if err != nil {
				return out, err
			}
			if out, err = f(v, out); err != nil {
				return out, err
			}
		}
		return out, nil
	}
	ps := procs{
		"seed": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			out, err := onEach(tx, out, func(v *Tx, out []byte) ([]byte, error) { return seed(v, in, out) })
			if err != nil || len(tx.Scope()) != tx.Partitions() {
				return out, err
			}
			for _, k := range []string{"a", "b"} {
				if err := tx.Put("rep", []byte(k), []byte("seed-"+k)); err != nil {
					return out, err
				}
			}
			return out, nil
		},
		"fail": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			out, err := onEach(tx, out, mutateAll)
			if err != nil {
				return out, fmt.Errorf("unexpected: %w", err)
			}
			return out, fmt.Errorf("after all changes: %w", errHandler)
		},
		"panic": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			out, err := onEach(tx, out, mutateAll)
			if err != nil {
				return out, fmt.Errorf("unexpected: %w", err)
			}
			panic("boom")
		},
		"panic-in-scan": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			if _, err := mutateAll(tx, out); err != nil {
				return out, fmt.Errorf("unexpected: %w", err)
			}
			return out, tx.Scan("t", ScanOptions{}, func(k, v []byte) bool {
				var m map[string]int
				m[string(k)]++ // a runtime panic (nil map) mid-scan
				return true
			})
		},
		"ok": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			// Writing succeeds, so no scan or failure state leaked from the previous input.
			if err := tx.Put("t", []byte("ok"), []byte("ok")); err != nil {
				return out, err
			}
			if err := tx.Delete("t", []byte("ok")); err != nil {
				return out, err
			}
			return append(out, "ok"...), nil
		},
	}
	isHandlerErr := func(err error) bool { return errors.Is(err, errHandler) }
	isPanic := func(err error) bool {
		var pe *PanicError
		return errors.Is(err, ErrPanic) && errors.As(err, &pe)
	}
	tests := []struct {
		name    string
		parts   int
		seq     bool
		in      Input
		wantErr func(error) bool
		errText string
	}{
		{"error, single", 1, false, Input{Procedure: "fail"}, isHandlerErr, "after all changes: handler gave up"},
		{"panic, single", 1, false, Input{Procedure: "panic"}, isPanic, "procedure panicked: boom"},
		{"panic in scan", 1, false, Input{Procedure: "panic-in-scan"}, isPanic,
			"procedure panicked: assignment to entry in nil map"},
		{"error, one of 3", 3, false, Input{Procedure: "fail", Partition: 2}, isHandlerErr, "after all changes: handler gave up"},
		{"panic, one of 3", 3, false, Input{Procedure: "panic", Partition: 1}, isPanic, "procedure panicked: boom"},
		{"error, partial scope", 3, false, Input{Procedure: "fail", Scope: []int{0, 2}}, isHandlerErr, "after all changes: handler gave up"},
		{"error, all partitions", 3, false, Input{Procedure: "fail", Scope: []int{0, 1, 2}}, isHandlerErr, "after all changes: handler gave up"},
		{"panic, all partitions", 3, false, Input{Procedure: "panic", Scope: []int{0, 1, 2}}, isPanic, "procedure panicked: boom"},
		{"panic, all partitions, sequential", 3, true, Input{Procedure: "panic", Scope: []int{0, 1, 2}}, isPanic, "procedure panicked: boom"},
		{"error, one of 3, sequential", 3, true, Input{Procedure: "fail", Partition: 2}, isHandlerErr, "after all changes: handler gave up"},
	}
	for i, tt := range tests {
		e := newEngine(t, Config{Partitions: tt.parts, ReplicatedTables: []string{"rep"}, Sequential: tt.seq}, ps)
		if err := runErr(e, Input{Procedure: "seed", Scope: AllPartitions(tt.parts)}); err != nil {
			t.Fatalf("#%d seed: %v", i, err)
		}
		before := dump(e)
		hashes := e.Hashes()

		// The failing input alone.
		res := e.Execute([]Input{tt.in})
		if err := res[0].Err; !tt.wantErr(err) || err.Error() != tt.errText {
			t.Errorf("#%d %s: got error %v, want %q", i, tt.name, err, tt.errText)
		}
		if res[0].Value != nil {
			t.Errorf("#%d %s: failed input has Value %q", i, tt.name, res[0].Value)
		}
		if after := dump(e); after != before {
			t.Errorf("#%d %s: state changed:\n%s\nwant\n%s", i, tt.name, after, before)
		}
		if got := e.Hashes(); !reflect.DeepEqual(got, hashes) {
			t.Errorf("#%d %s: hashes %x, want %x", i, tt.name, got, hashes)
		}
		checkHashes(t, e)

		// Between successful inputs of one batch: their results and effects survive.
		p := tt.in.Partition
		if tt.in.Scope != nil {
			p = tt.in.Scope[0]
		}
		got := exec(e,
			Input{Procedure: "ok", Partition: p},
			tt.in,
			Input{Procedure: "ok", Partition: p},
		)
		if string(got[0].Value) != "ok" || got[0].Err != "" || string(got[2].Value) != "ok" || got[2].Err != "" {
			t.Errorf("#%d %s: neighbours got %v, %v; want \"ok\", \"ok\"", i, tt.name, got[0], got[2])
		}
		if got[1].Err != tt.errText || got[1].Value != nil {
			t.Errorf("#%d %s: in a batch got %v, want err(%s)", i, tt.name, got[1], tt.errText)
		}
		if after := dump(e); after != before {
			t.Errorf("#%d %s: state changed in a batch:\n%s\nwant\n%s", i, tt.name, after, before)
		}
	}
}

// TestFailedResultBytesDiscarded checks that bytes a failing handler appended to out do
// not show up in any other input's result.
func TestFailedResultBytesDiscarded(t *testing.T) {
	e := newEngine(t, Config{Partitions: 1}, procs{
		"echo": func(tx *Tx, in *Input, out []byte) ([]byte, error) { return append(out, in.Args...), nil },
		"fail": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			return append(out, "garbage"...), errHandler
		},
		"panic": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			out = append(out, "garbage"...)
			panic(errHandler)
		},
	})
	got := exec(e,
		Input{Procedure: "echo", Args: []byte("1")},
		Input{Procedure: "fail"},
		Input{Procedure: "echo", Args: []byte("2")},
		Input{Procedure: "panic"},
		Input{Procedure: "echo", Args: []byte("3")},
		Input{Procedure: "echo", Args: nil},
	)
	want := []result{{Value: []byte("1")}, {Err: errHandler.Error()}, {Value: []byte("2")},
		{Err: "procedure panicked: " + errHandler.Error()}, {Value: []byte("3")}, {Value: []byte{}}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
