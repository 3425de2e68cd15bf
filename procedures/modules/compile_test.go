package modules_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/procedures/modules"
)

// TestCompileRefuses: a module that does not compile, names a built-in or declares
// badly is refused with its typed error and a message that says where.
func TestCompileRefuses(t *testing.T) {
	const ok = "def f(tx, args):\n    return 1\n"
	for i, tt := range []struct {
		src  string
		want error
		text string // in the message
	}{
		{"def f(tx, args)\n    return 1\n", modules.ErrCompile, "app.star:2:1"},                 // syntax
		{ok + "procedures = {'app.f': g}\n", modules.ErrCompile, "app.star:3:24: undefined: g"}, // resolve
		{"load('x.star', 'y')\n" + ok, modules.ErrCompile, "load"},
		{ok + "if True:\n    pass\n", modules.ErrCompile, "app.star:3:1"}, // top-level if
		{ok + "fail('at init')\nprocedures = {'app.f': f}\n", modules.ErrCompile, "at init"},
		{ok + "x = [i for i in range(1 << 40)]\nprocedures = {'app.f': f}\n", modules.ErrLimitExceeded, "steps"},
		{ok + "procedures = {'kv.put': f}\n", modules.ErrRedefined, "kv.put is built in"},
		{ok + "processors = {'demo.page_counts': processor(f, input = 'x')}\n", modules.ErrRedefined, "demo.page_counts"},
		{ok + "procedures = {'app.f': f}\nprocessors = {'app.f': processor(f, input = 'x')}\n", modules.ErrRedefined, "twice"},
		{ok, modules.ErrDeclaration, "neither"},
		{ok + "procedures = [f]\n", modules.ErrDeclaration, "want a dict"},
		{ok + "procedures = {1: f}\n", modules.ErrDeclaration, "not a string"},
		{ok + "procedures = {'': f}\n", modules.ErrDeclaration, "name"},
		{ok + "procedures = {'" + strings.Repeat("x", 129) + "': f}\n", modules.ErrDeclaration, "name"},
		{ok + "procedures = {'app.f': 1}\n", modules.ErrDeclaration, "is a int"},
		{ok + "def g(tx):\n    pass\nprocedures = {'app.g': g}\n", modules.ErrDeclaration, "want (tx, args)"},
		{ok + "procedures = {'app.f': procedure(f, bogus = 1)}\n", modules.ErrCompile, "bogus"},
		{ok + "processors = {'app.p': f}\n", modules.ErrDeclaration, "want processor(...)"},
		{ok + "processors = {'app.p': processor(f, input = '')}\n", modules.ErrDeclaration, "app.p"},
		{ok + "processors = {'app.p': processor(f, input = 'a', emits = ['a'])}\n", modules.ErrDeclaration, "app.p"},
		{ok + "processors = {'app.p': processor(f, input = 'a', start = 'middle')}\n", modules.ErrCompile, "start"},
		{ok + "processors = {'app.p': processor(f, input = 'a', emits = [1])}\n", modules.ErrCompile, "emits"},
		{ok + "procedures = {'app.f': f}\nprocedures = {}\n", modules.ErrCompile, "app.star:4:1"}, // global reassigned
	} {
		_, err := modules.Compile("app.star", []byte(tt.src), modules.Options{Existing: builtinNames()})
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("#%d: got %v, want %v containing %q", i, err, tt.want, tt.text)
		}
	}
	for i, o := range []modules.Options{{MaxValueBytes: 1 << 30}, {MaxValueBytes: -1}, {MaxElements: -1}} {
		if _, err := modules.Compile("app.star", []byte(ok+"procedures = {'app.f': f}\n"), o); !errors.Is(err, modules.ErrBadOptions) {
			t.Errorf("options #%d %+v: got %v, want ErrBadOptions", i, o, err)
		}
	}
	if d := modules.DefaultOptions(); d.MaxSteps != modules.DefaultMaxSteps || d.MaxElements != modules.DefaultMaxElements || d.MaxValueBytes != modules.DefaultMaxValueBytes {
		t.Errorf("DefaultOptions %+v", d)
	}
}

// FuzzCompile: Compile never panics or hangs, whatever the source, and either returns a
// module or one of its typed errors. The corpus is the seeds below; CI runs them only.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		appModule,
		"def f(tx, args):\n    return 1\nprocedures = {'app.f': f}\n",
		"x = [0] * 100000000\n",
		"def f(tx, r):\n    while True:\n        pass\nprocessors = {'p': processor(f, input = 's')}\n",
		"procedures = {'a': procedure(lambda tx, a: a, multi = True)}\n",
		"x = {1: 2}\ny = x | {3: 4}\nz = '%s' % (x,)\n",
		"def", "\x00", "procedures = None",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		_, err := modules.Compile("fuzz.star", src, modules.Options{MaxSteps: 100_000})
		if err == nil {
			return
		}
		for _, want := range []error{modules.ErrCompile, modules.ErrDeclaration, modules.ErrRedefined, modules.ErrLimitExceeded} {
			if errors.Is(err, want) {
				return
			}
		}
		t.Fatalf("untyped error: %v", err)
	})
}
