package modules_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/modules"
	"github.com/lockstepdb/lockstep/procedures/schema"
	"github.com/vmihailenco/msgpack/v5"
)

// appModule exercises the whole tx surface: a procedure that reads, writes, scans,
// appends a click and returns a dict built in a random order, and a processor that
// counts clicks per page and emits the new count on the click's own partition.
const appModule = `
def add(tx, args):
    n = tx.get("app.counts", tx.key(), 0) + args["delta"]
    tx.put("app.counts", tx.key(), n)
    seen = {}
    for k, v in tx.scan("app.counts", limit = 5):
        seen[k] = v
    r = tx.rand(1000)
    out = {"r": r, "n": n, "now": tx.now(), "f": tx.rand() < 2.0, "part": tx.partition()}
    if r % 2:
        out = {"part": tx.partition(), "f": True, "now": out["now"], "n": n, "r": r}
    out["seen"] = seen
    return out

def click(tx, args):
    return tx.append("app.clicks", tx.key(), {"page": args["page"], "ms": args.get("ms", 0)})

def total(tx, args):
    s = 0
    for p in range(tx.partitions()):
        for k, v in tx.on(p).scan("app.counts"):
            s += v
    return s

def count(tx, rec):
    page = rec.value["page"]
    if page.startswith("skip"):
        return
    n = tx.get("app.pages", page, 0) + 1
    tx.put("app.pages", page, n)
    tx.emit("app.page_counts", rec.key, [page, n], rec.time)

procedures = {
    "app.add": add,
    "app.click": click,
    "app.total": procedure(total, read_only = True, multi = True, doc = "sum of counts"),
}
processors = {"app.count": processor(count, input = "app.clicks", emits = ["app.page_counts"])}
`

// appLog is a log for appModule: the streams, then adds and clicks on many keys.
func appLog(t testing.TB, e *engine, n int, seed uint64) []partition.Input {
	log := e.createStreams(t, "app.clicks", "app.page_counts")
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range n {
		key := fmt.Sprintf("k%d", rng.IntN(20))
		switch i % 3 {
		case 0:
			log = append(log, e.input(t, "app.add", key, map[string]any{"delta": rng.IntN(10)}))
		case 1:
			log = append(log, e.input(t, "app.click", key, map[string]any{"page": fmt.Sprintf("p%d", rng.IntN(5))}))
		default:
			log = append(log, e.input(t, "app.total", "", nil))
		}
	}
	return log
}

// TestModuleDeterministic: the same module and log give byte-identical results and state
// on engines run in parallel or sequentially and with the log cut into batches whole,
// one input at a time or at random sizes (DESIGN.md invariant 1).
func TestModuleDeterministic(t *testing.T) {
	m := mustCompile(t, appModule, modules.Options{})
	var refResults []string
	var refState string
	for i, run := range []struct {
		sequential bool
		batch      int // 0: random sizes
	}{{false, 1 << 30}, {true, 1 << 30}, {false, 1}, {false, 0}, {true, 0}} {
		e := newEngine(t, m, 4, run.sequential)
		log := appLog(t, e, 300, 7)
		rng := rand.New(rand.NewPCG(uint64(i), 2))
		var results []string
		for from := 0; from < len(log); {
			size := run.batch
			if size == 0 {
				size = 1 + rng.IntN(16)
			}
			to := min(from+size, len(log))
			results = append(results, e.apply(log[from:to])...)
			from = to
		}
		state := e.dump(t)
		if i == 0 {
			refResults, refState = results, state
			for j, r := range results {
				if strings.HasSuffix(r, "<nil>") == false {
					t.Fatalf("input %d (%s): %s", j, log[j].Procedure, r)
				}
			}
			if !strings.Contains(state, "app.page_counts") || !strings.Contains(state, "app.pages") {
				t.Fatalf("processor did not run:\n%s", state)
			}
			continue
		}
		for j := range refResults {
			if results[j] != refResults[j] {
				t.Fatalf("run %d input %d (%s): got %s, want %s", i, j, log[j].Procedure, results[j], refResults[j])
			}
		}
		if state != refState {
			t.Errorf("run %d: state differs (invariant 1)", i)
		}
	}
}

// TestModuleResult: a procedure's result is canonical msgpack: the same dict built in two
// insertion orders encodes to the same bytes, and decodes to what the code returned.
func TestModuleResult(t *testing.T) {
	m := mustCompile(t, `
def f(tx, args):
    if args:
        return {"b": [1, 2.5, None, True, "x", b"y"], "a": -300, 7: {"z": 1, "y": 2}}
    return {7: {"y": 2, "z": 1}, "a": -300, "b": [1, 2.5, None, True, "x", b"y"]}
procedures = {"app.f": f}
`, modules.Options{})
	e := newEngine(t, m, 1, true)
	r1 := e.eng.Execute([]partition.Input{e.input(t, "app.f", "k", true)})[0]
	v1 := string(r1.Value)
	r2 := e.eng.Execute([]partition.Input{e.input(t, "app.f", "k", false)})[0]
	if r1.Err != nil || r2.Err != nil || v1 != string(r2.Value) {
		t.Fatalf("got %x (%v) and %x (%v), want equal bytes", v1, r1.Err, r2.Value, r2.Err)
	}
	var got map[any]any
	if err := msgpack.Unmarshal([]byte(v1), &got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got["a"]) != "-300" || fmt.Sprint(got["b"]) != "[1 2.5 <nil> true x [121]]" {
		t.Errorf("got %v", got)
	}
}

// TestFrozenGlobals: a module's globals are frozen after its top-level code, so an
// invocation cannot keep state for the next one.
func TestFrozenGlobals(t *testing.T) {
	m := mustCompile(t, `
cache = []
def f(tx, args):
    cache.append(1)
    return len(cache)
procedures = {"app.f": f}
`, modules.Options{})
	e := newEngine(t, m, 1, true)
	r := e.eng.Execute([]partition.Input{e.input(t, "app.f", "k", nil)})[0]
	if !errors.Is(r.Err, modules.ErrRaised) || !strings.Contains(r.Err.Error(), "frozen") {
		t.Fatalf("got %v, want ErrRaised: frozen list", r.Err)
	}
}

// TestRegister: a module's procedures are listed in the catalogue with KindAny arguments
// and results and its flags, its processors with their streams, and they change the
// registry's fingerprint; registering one twice is refused.
func TestRegister(t *testing.T) {
	m := mustCompile(t, appModule, modules.Options{})
	reg := procedures.New()
	fp := reg.Fingerprint()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	if reg.Fingerprint() == fp {
		t.Error("fingerprint unchanged by the module's registrations")
	}
	var found bool
	for _, p := range reg.Catalog() {
		if p.Name == "app.total" {
			found = true
			if p.Args.Kind != schema.KindAny || p.Result.Kind != schema.KindAny || !p.ReadOnly || !p.Multi || p.Doc != "sum of counts" {
				t.Errorf("catalogue entry %+v", p)
			}
		}
	}
	if !found {
		t.Error("app.total not in the catalogue")
	}
	ps := reg.ListProcessors()
	if len(ps) != 1 || ps[0].Name != "app.count" || ps[0].Input != "app.clicks" || fmt.Sprint(ps[0].Emits) != "[app.page_counts]" {
		t.Errorf("processors %+v", ps)
	}
	if err := m.Register(reg); !errors.Is(err, procedures.ErrDuplicate) {
		t.Errorf("second Register: got %v, want ErrDuplicate", err)
	}
}

// TestBadArguments: arguments that are not one msgpack value fail with
// ErrBadArguments, and a value that cannot be encoded with ErrValue; nothing changes
// (invariant 7).
func TestBadArguments(t *testing.T) {
	m := mustCompile(t, `
def f(tx, args):
    tx.put("t", "k", 1)
    if args == "set":
        return set([1])
    if args == "big":
        return 1 << 70
    return args
procedures = {"app.f": f}
`, modules.Options{})
	e := newEngine(t, m, 1, true)
	before := e.dump(t)
	for i, tt := range []struct {
		args []byte
		want error
	}{
		{[]byte{0x92, 0x01}, procedures.ErrBadArguments},                   // truncated array
		{[]byte{0xdd, 0xff, 0xff, 0xff, 0xff}, procedures.ErrBadArguments}, // claims 4G elements
		{[]byte{0x01, 0x02}, procedures.ErrBadArguments},                   // trailing bytes
		{[]byte{0xd4, 0x01, 0x00}, procedures.ErrBadArguments},             // ext
		{[]byte{0x81, 0x90, 0x01}, procedures.ErrBadArguments},             // list as a map key
		{[]byte{0xa3, 's', 'e', 't'}, modules.ErrValue},
		{[]byte{0xa3, 'b', 'i', 'g'}, modules.ErrValue},
	} {
		in := e.input(t, "app.f", "k", nil)
		in.Args = tt.args
		r := e.eng.Execute([]partition.Input{in})[0]
		if !errors.Is(r.Err, tt.want) {
			t.Errorf("#%d: got %v, want %v", i, r.Err, tt.want)
		}
	}
	if after := e.dump(t); after != before {
		t.Errorf("state changed by failed inputs")
	}
}
