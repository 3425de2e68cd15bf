package modules_test

import (
	"errors"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/modules"
)

// FuzzArgs: whatever bytes arrive as a module procedure's arguments (from the log), the
// decoder returns a value or ErrBadArguments, never panics or allocates past the bytes;
// and the canonical encoding is a fixed point: echoing an echo gives the same bytes.
func FuzzArgs(f *testing.F) {
	for _, s := range [][]byte{
		nil, {0xc0}, {0x93, 0x01, 0xa1, 'a', 0xc3}, {0x82, 0xa1, 'b', 0x01, 0xa1, 'a', 0x02},
		{0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 1}, {0xdd, 0xff, 0xff, 0xff, 0xff}, {0xc6, 0xff, 0xff, 0xff, 0xff},
		{0x81, 0x91, 0x01, 0x02}, {0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0},
	} {
		f.Add(s)
	}
	m, err := modules.Compile("echo.star", []byte("def echo(tx, args):\n    return args\nprocedures = {'echo': echo}\n"), modules.Options{})
	if err != nil {
		f.Fatal(err)
	}
	e := newEngine(f, m, 1, true)
	call := func(args []byte) ([]byte, error) {
		in := partition.Input{Procedure: "echo", Key: []byte("k"), Args: args, Seq: 1}
		r := e.eng.Execute([]partition.Input{in})[0]
		return append([]byte(nil), r.Value...), r.Err
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		out, err := call(args)
		if err != nil {
			if !errors.Is(err, procedures.ErrBadArguments) && !errors.Is(err, modules.ErrLimitExceeded) && !errors.Is(err, modules.ErrValue) {
				t.Fatalf("%x: untyped error %v", args, err)
			}
			return
		}
		again, err := call(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("%x: echo %x, echo of echo %x (%v)", args, out, again, err)
		}
	})
}

// FuzzRun: whatever a procedure's body is, once it compiles, running it ends within its
// budgets with a result or a typed error: it does not panic, hang or take unbounded
// memory. The seeds are the hostile bodies of TestHostileProcedures.
func FuzzRun(f *testing.F) {
	for _, h := range hostile {
		f.Add(h.body)
	}
	f.Add("return {'a': [1, 2.5, None], 'b': (b'x', 'y')}")
	f.Add("x = {}\n    for i in range(100):\n        x[str(i)] = [i] * i\n    tx.put('t', 'k', x)\n    return tx.scan('t')")
	f.Fuzz(func(t *testing.T, body string) {
		src := "def f(tx, args):\n    " + body + "\n\nprocedures = {'app.f': f}\n"
		m, err := modules.Compile("fuzz.star", []byte(src), modules.Options{MaxSteps: 50_000, MaxElements: 10_000, MaxValueBytes: 64 << 10})
		if err != nil {
			return
		}
		e := newEngine(t, m, 1, true)
		r := e.eng.Execute([]partition.Input{e.input(t, "app.f", "k", nil)})[0]
		if r.Err == nil {
			return
		}
		for _, want := range []error{modules.ErrRaised, modules.ErrLimitExceeded, modules.ErrValue, partition.ErrResultTooLarge} {
			if errors.Is(r.Err, want) {
				return
			}
		}
		t.Fatalf("untyped error: %v", r.Err)
	})
}
