package modules_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/modules"
)

// hostile are procedure bodies that must fail with a typed error, not run forever or take
// the memory they ask for (DESIGN.md section 10: a deterministic step budget and value
// size bound per invocation).
var hostile = []struct {
	name, body string
	want       error
	limit      string // the LimitError's Limit, for ErrLimitExceeded
}{
	{"while", "while True:\n        pass", modules.ErrLimitExceeded, "steps"},
	{"for", "for i in range(1 << 60):\n        tx.get('t', 'k')", modules.ErrLimitExceeded, "steps"},
	{"repeat", "x = [0] * 100000000", modules.ErrLimitExceeded, "elements"},
	{"repeat_str", "x = 'ab' * 100000000", modules.ErrLimitExceeded, "value bytes"},
	{"double", "x = [0]\n    for i in range(64):\n        x = x + x", modules.ErrLimitExceeded, "elements"},
	{"double_aug", "x = [0]\n    for i in range(64):\n        x += x", modules.ErrLimitExceeded, "elements"},
	{"extend", "x = [0]\n    for i in range(64):\n        x.extend(x)", modules.ErrLimitExceeded, "elements"},
	{"method_value", "x = [0]\n    e = x.extend\n    for i in range(64):\n        e(x)", modules.ErrLimitExceeded, "elements"},
	{"getattr", "x = [0]\n    for i in range(64):\n        getattr(x, 'extend')(x)", modules.ErrLimitExceeded, "elements"},
	{"list_range", "x = list(range(1 << 40))", modules.ErrLimitExceeded, "elements"},
	{"sorted_range", "x = sorted(range(1 << 40))", modules.ErrLimitExceeded, "elements"},
	{"join", "s = 'x' * 100000\n    x = s.join(['a'] * 50000)", modules.ErrLimitExceeded, "value bytes"},
	{"replace", "s = 'a' * 100000\n    x = s.replace('a', s)", modules.ErrLimitExceeded, "value bytes"},
	{"str_shared", "s = 'x' * 100000\n    x = str([s] * 1000)", modules.ErrLimitExceeded, "value bytes"},
	{"percent", "s = 'x' * 100000\n    x = '%s' % ([s] * 1000,)", modules.ErrLimitExceeded, "value bytes"},
	{"format", "s = 'x' * 100000\n    x = ('{0}' * 1000).format(s)", modules.ErrLimitExceeded, "value bytes"},
	{"square", "x = 3\n    for i in range(64):\n        x = x * x", modules.ErrLimitExceeded, "int bits"},
	{"slices", "x = [0] * 50000\n    y = []\n    for i in range(1000000):\n        y.append(x[:])", modules.ErrLimitExceeded, "steps"},
	{"put_big", "tx.put('t', 'k', ['x' * 60000] * 100)", modules.ErrLimitExceeded, "value bytes"},
	{"return_big", "return ['x' * 60000] * 100", modules.ErrLimitExceeded, "value bytes"},
	{"deep", "x = []\n    for i in range(100):\n        x = [x]\n    return x", modules.ErrLimitExceeded, "depth"},
	{"deep_equal", "x, y = ['a' * 64], ['a' * 63 + 'a']\n    for i in range(60):\n        x, y = [x, x], [y, y]\n    return x == y", modules.ErrLimitExceeded, "steps"},
	{"deep_in", "x, y = ['a' * 64], ['a' * 63 + 'a']\n    for i in range(60):\n        x, y = [x, x], [y, y]\n    return x in [y]", modules.ErrLimitExceeded, "steps"},
	{"deep_key", "t = ('a' * 64,)\n    for i in range(60):\n        t = (t, t)\n    d = {}\n    d[t] = 1", modules.ErrLimitExceeded, "steps"},
	{"deep_get", "t = ('a' * 64,)\n    for i in range(60):\n        t = (t, t)\n    return {}.get(t)", modules.ErrLimitExceeded, "steps"},
	{"deep_literal", "t = ('a' * 64,)\n    for i in range(60):\n        t = (t, t)\n    return {t: 1}", modules.ErrLimitExceeded, "steps"},
	{"deep_index", "x, y = ['a' * 64], ['a' * 63 + 'a']\n    for i in range(60):\n        x, y = [x, x], [y, y]\n    return [x].index(y)", modules.ErrLimitExceeded, "steps"},
	{"deep_sorted", "x, y = ['a' * 64], ['a' * 63 + 'a']\n    for i in range(60):\n        x, y = [x, x], [y, y]\n    return sorted([x, y])", modules.ErrLimitExceeded, "steps"},
	{"deep_put", "x = ['a' * 64]\n    for i in range(60):\n        x = [x, x]\n    tx.put('t', 'k', x)", modules.ErrLimitExceeded, "value bytes"},
	{"hash_long", "s = 'x' * 1000000\n    d = {}\n    for i in range(1000):\n        d[s] = i", modules.ErrLimitExceeded, "steps"},
	{"compare_long", "s, t = 'x' * 1000000, 'x' * 999999 + 'x'\n    n = 0\n    for i in range(1000):\n        n += int(s == t)", modules.ErrLimitExceeded, "steps"},
	{"pop_front", "x = [0] * 90000\n    for i in range(90000):\n        x.pop(0)", modules.ErrLimitExceeded, "steps"},
	{"no_args", "return [int(), sorted(), max()]", modules.ErrRaised, ""},
	{"fail", "fail('boom', 42)", modules.ErrRaised, ""},
	{"divide", "return 1 // 0", modules.ErrRaised, ""},
	{"index", "return [1][5]", modules.ErrRaised, ""},
	{"recursion", "return f(tx, args)", modules.ErrRaised, ""},
	{"tx_error", "tx.put('sys.x', 'k', 1)", modules.ErrRaised, ""},
}

// TestHostileProcedures: each hostile body fails with its typed error, with the same
// text on two engines of different shapes, and leaves no trace (invariant 2); the engine
// goes on serving.
func TestHostileProcedures(t *testing.T) {
	opts := modules.Options{MaxSteps: 1_000_000, MaxElements: 100_000, MaxValueBytes: 1 << 20}
	for i, tt := range hostile {
		src := fmt.Sprintf("def f(tx, args):\n    tx.put('t', 'before', 1)\n    %s\n\ndef ok(tx, args):\n    return 1\n\nprocedures = {'app.f': f, 'app.ok': ok}\n", tt.body)
		m := mustCompile(t, src, opts)
		var texts []string
		for _, shape := range []struct {
			n   int
			seq bool
		}{{1, true}, {4, false}} {
			e := newEngine(t, m, shape.n, shape.seq)
			before := e.dump(t)
			r := e.eng.Execute([]partition.Input{e.input(t, "app.f", "k", nil), e.input(t, "app.ok", "k", nil)})
			if !errors.Is(r[0].Err, tt.want) {
				t.Errorf("#%d %s: got %v, want %v", i, tt.name, r[0].Err, tt.want)
				continue
			}
			var le *modules.LimitError
			if tt.limit != "" && (!errors.As(r[0].Err, &le) || le.Limit != tt.limit) {
				t.Errorf("#%d %s: got %v, want the %s limit", i, tt.name, r[0].Err, tt.limit)
			}
			if r[1].Err != nil {
				t.Errorf("#%d %s: next input: %v", i, tt.name, r[1].Err)
			}
			if strings.Contains(r[0].Err.Error(), "0x") {
				t.Errorf("#%d %s: message has an address: %v", i, tt.name, r[0].Err)
			}
			texts = append(texts, r[0].Err.Error())
			after := e.dump(t)
			if after != before {
				t.Errorf("#%d %s: state changed (invariant 2)", i, tt.name)
			}
		}
		if len(texts) == 2 && texts[0] != texts[1] {
			t.Errorf("#%d %s: error text differs between engines:\n%s\n%s", i, tt.name, texts[0], texts[1])
		}
		t.Logf("#%d %s: %s", i, tt.name, texts)
	}
}

// TestPoisonRecords: a processor record that loops, allocates without end or raises goes
// to the dead-letter stream with its typed error, identically on two engines, and the
// records after it are processed (a poison record costs one dead letter, not an outage).
func TestPoisonRecords(t *testing.T) {
	m := mustCompile(t, `
def count(tx, rec):
    v = rec.value
    if v == "loop":
        while True:
            pass
    if v == "huge":
        x = [v] * 1000000000
    if v == "raise":
        fail("poison", rec.offset)
    tx.put("counts", rec.key, tx.get("counts", rec.key, 0) + 1)

def click(tx, args):
    tx.append("clicks", tx.key(), args)

procedures = {"app.click": click}
processors = {"app.count": processor(count, input = "clicks")}
`, modules.Options{MaxSteps: 100_000})
	var refDead []partition.DeadLetter
	for run, n := range []int{1, 3} {
		e := newEngine(t, m, n, run == 0)
		log := e.createStreams(t, "clicks")
		for _, v := range []string{"a", "loop", "b", "huge", "c", "raise", "d"} {
			log = append(log, e.input(t, "app.click", "k", v))
		}
		for _, r := range e.apply(log) {
			if !strings.HasSuffix(r, "<nil>") {
				t.Fatalf("input: %s", r)
			}
		}
		dead := e.deadLetters(t, "clicks")
		if len(dead) != 3 {
			t.Fatalf("%d dead letters, want 3: %+v", len(dead), dead)
		}
		for i, want := range []string{"steps", "elements", "poison"} {
			if !strings.Contains(dead[i].Error, want) {
				t.Errorf("dead letter %d: %q, want it to name %s", i, dead[i].Error, want)
			}
		}
		var counted []byte
		for _, p := range e.eng.Partitions() {
			if v, ok := p.Get("counts", []byte("k")); ok {
				counted = v
			}
		}
		if len(counted) != 1 || counted[0] != 4 {
			t.Errorf("count %x, want 4 (the good records)", counted)
		}
		if run == 0 {
			refDead = dead
			continue
		}
		if fmt.Sprint(dead) != fmt.Sprint(refDead) {
			t.Errorf("dead letters differ between engines:\n%+v\n%+v", dead, refDead)
		}
	}
}

// TestOrdinaryCodeFits: code that does ordinary work on values of thousands of elements
// fits the default budgets: the charges follow the work done, they do not
// charge a container's size for each small change to it.
func TestOrdinaryCodeFits(t *testing.T) {
	m := mustCompile(t, `
def f(tx, args):
    d, l, s = {}, [], set()
    for i in range(5000):
        k = "k%d" % i
        d[k] = i
        d.update({k: i + 1})
        l.append(k)
        l.extend([i])
        s.add(k)
    keys = sorted(d.keys())
    total = 0
    for k, v in d.items():
        if v > 10 and k in d:
            total += v
    return [len(d), len(l), len(s), len(",".join(keys)), total, l.index(l[-1]) > 0]
procedures = {"app.f": f}
`, modules.Options{})
	e := newEngine(t, m, 1, true)
	r := e.eng.Execute([]partition.Input{e.input(t, "app.f", "k", nil)})[0]
	if r.Err != nil {
		t.Fatalf("got %v, want the default budget to suffice", r.Err)
	}
}
