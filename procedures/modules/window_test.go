package modules_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/modules"
	"github.com/lockstepdb/lockstep/procedures/window"
	"github.com/vmihailenco/msgpack/v5"
)

// windowModule is a window aggregate over "clicks" that counts records per key and
// window (its spec filled in), results and late records to streams of its own, and the
// procedure that appends the clicks.
const windowModule = `
def add(state, rec):
    return state + 1

def merge(a, b):
    return a + b

def result(tx, r):
    tx.emit("mod.counts", r.key, [r.start, r.end, r.value, r.revision, r.final, r.retracted], r.end - 1)

def late(tx, rec, wm):
    tx.emit("mod.late", rec.key, [rec.time, wm, rec.value], rec.time)

def click(tx, args):
    return tx.append("clicks", tx.key(), args["v"], args["t"])

procedures = {"app.click": click}
processors = {"mod.win": processor(add, input = "clicks", window = %s, init = 0, %s
    result = result, late = late, outputs = ["mod.counts", "mod.late"])}
`

// registerGoWindow registers the Go processor go.win that does what windowModule's
// mod.win does, with assigner a, through window.Aggregate.
func registerGoWindow(t testing.TB, reg *procedures.Registry, a window.Assigner, ooo, lateness int64) {
	t.Helper()
	cfg := window.Config[string, int64]{
		Name: "go.win", Assigner: a, OutOfOrderness: ooo, AllowedLateness: lateness,
		Init: func() int64 { return 0 },
		Add:  func(s int64, _ string) int64 { return s + 1 },
		Emit: func(tx *partition.Tx, r window.Result[int64]) error {
			v, err := msgpack.Marshal([]any{r.Start, r.End, r.Value, r.Revision, r.Final, r.Retracted})
			if err != nil {
				return err
			}
			return tx.Emit("go.counts", r.Key, v, r.End-1)
		},
		Late: func(tx *partition.Tx, l window.LateRecord[string]) error {
			v, err := msgpack.Marshal([]any{l.EventTime, l.Watermark, l.Value})
			if err != nil {
				return err
			}
			return tx.Emit("go.late", l.Key, v, l.EventTime)
		},
	}
	if _, ok := a.(window.Session); ok {
		cfg.Merge = func(x, y int64) int64 { return x + y }
	}
	agg, err := window.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = procedures.RegisterProcessor(reg, "go.win", "clicks", func(tx *partition.Tx, rec partition.Record) error {
		var v string
		if err := msgpack.Unmarshal(rec.Value, &v); err != nil {
			return err
		}
		return agg.Process(tx, rec.Key, rec.EventTime, v)
	}, procedures.Output("go.counts", partition.StreamConfig{}), procedures.Output("go.late", partition.StreamConfig{}),
		procedures.OnTick(agg.Advance))
	if err != nil {
		t.Fatal(err)
	}
}

// newEngineWith is newEngine with more registrations.
func newEngineWith(t testing.TB, m *modules.Module, n int, sequential bool, more func(*procedures.Registry)) *engine {
	t.Helper()
	reg := procedures.Builtins()
	if err := m.Register(reg); err != nil {
		t.Fatalf("Register: %v", err)
	}
	more(reg)
	eng, err := partition.NewEngine(partition.Config{Partitions: n, Sequential: sequential,
		Processors: reg.Processors(), ReplicatedTables: reg.ReplicatedTables(), Changelogs: reg.Changelogs()}, reg.NewHandler)
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	t.Cleanup(eng.Close)
	return &engine{reg: reg, eng: eng}
}

// streamValues returns every partition's records of stream, decoded, one line each.
func streamValues(t testing.TB, e *engine, stream string) string {
	t.Helper()
	var b strings.Builder
	for _, p := range e.eng.Partitions() {
		recs, _, err := p.ReadStream(stream, 0, 1<<30)
		if err != nil {
			t.Fatalf("partition %d: %s: %v", p.ID(), stream, err)
		}
		for _, r := range recs {
			var v any
			if err := msgpack.Unmarshal(r.Value, &v); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "p%d %d %s @%d %v\n", p.ID(), r.Offset, r.Key, r.EventTime, v)
		}
	}
	return b.String()
}

// TestWindowModuleMatchesGo: a module's window aggregate emits exactly the results and
// late records of the Go processor running procedures/window's operator with the same
// configuration, over random out-of-order input cut into log entries at random, for
// tumbling, hopping and session windows.
func TestWindowModuleMatchesGo(t *testing.T) {
	for i, c := range []struct {
		spec  string
		merge string
		a     window.Assigner
	}{
		{`tumbling("1s", out_of_order = 300, lateness = "500ms")`, "", window.Tumbling{Size: 1000}},
		{`hopping(1000, 250, out_of_order = 300, lateness = 500)`, "", window.Hopping{Size: 1000, Slide: 250}},
		{`session("200ms", out_of_order = 300, lateness = 500)`, "merge = merge,", window.Session{Gap: 200}},
	} {
		src := fmt.Sprintf(windowModule, c.spec, c.merge)
		m := mustCompile(t, src, modules.Options{})
		for seed := uint64(1); seed <= 3; seed++ {
			e := newEngineWith(t, m, 3, false, func(reg *procedures.Registry) { registerGoWindow(t, reg, c.a, 300, 500) })
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			log := e.createStreams(t, "clicks")
			base := int64(1_700_000_000_000)
			for n := range 600 {
				ts := base + int64(n)*20 - rng.Int64N(1500) // out of order: up to 1.5 s behind, some late
				log = append(log, e.input(t, "app.click", fmt.Sprintf("k%d", rng.IntN(5)),
					map[string]any{"v": fmt.Sprintf("v%d", n), "t": ts}))
			}
			for from := 0; from < len(log); {
				to := min(from+1+rng.IntN(20), len(log))
				for j, r := range e.apply(log[from:to]) {
					if !strings.HasSuffix(r, "<nil>") {
						t.Fatalf("#%d: input %d: %s", i, from+j, r)
					}
				}
				from = to
			}
			got, want := streamValues(t, e, "mod.counts"), streamValues(t, e, "go.counts")
			if got != want || want == "" {
				t.Fatalf("#%d seed %d: module results differ from Go's:\n%s\nwant:\n%s", i, seed, got, want)
			}
			got, want = streamValues(t, e, "mod.late"), streamValues(t, e, "go.late")
			if got != want || (i == 0 && want == "") { // tumbling's input has late records
				t.Fatalf("#%d seed %d: module late records differ from Go's:\n%s\nwant:\n%s", i, seed, got, want)
			}
			if dl := e.deadLetters(t, "clicks"); len(dl) != 0 {
				t.Fatalf("#%d: dead letters %+v", i, dl)
			}
		}
	}
}

// tickModule has a processor whose tick hook counts ticks per partition with the time
// and a random draw, and fails on the partitions where the procedure app.fail set a flag.
const tickModule = `
def count(tx, rec):
    tx.put("app.seen", rec.key, tx.get("app.seen", rec.key, 0) + 1)

def tick(tx):
    k = str(tx.partition())
    if tx.get("app.flags", k, False):
        fail("tick refused on partition " + k)
    tx.put("app.ticks", k, [tx.get("app.ticks", k, [0])[0] + 1, tx.now(), tx.rand(1000)])

def click(tx, args):
    return tx.append("app.in", tx.key(), args, 0)

def failing(tx, args):
    tx.put("app.flags", str(tx.partition()), args)

procedures = {"app.click": click, "app.fail": failing}
processors = {"app.ticker": processor(count, input = "app.in", tick = tick,
    outputs = {"app.out": {"max_records": 10, "max_age": "1h", "compact": True}})}
`

// TestModuleTick: a module's tick hook runs once per partition per processor phase, the
// same on engines run in parallel and sequentially (DESIGN.md invariant 1: equal
// hashes); a failing tick is undone and dead-lettered with Tick set, once per run of
// identical failures, as a Go hook's is; the output declared is created on every
// partition with its configuration once the input exists.
func TestModuleTick(t *testing.T) {
	m := mustCompile(t, tickModule, modules.Options{})
	decl := m.Processors()[0]
	if !decl.Tick || decl.Windowed || len(decl.Outputs) != 1 || decl.Emits[0] != "app.out" {
		t.Fatalf("declaration %+v", decl)
	}
	var ref string
	for run, sequential := range []bool{false, true} {
		e := newEngine(t, m, 3, sequential)
		// No input stream yet: the processor waits and creates nothing.
		e.apply([]partition.Input{e.input(t, "app.fail", "x", false)})
		if _, ok := e.eng.Partitions()[0].StreamInfo("app.out"); ok {
			t.Fatal("output created before the input exists")
		}
		e.apply(e.createStreams(t, "app.in"))
		for _, p := range e.eng.Partitions() {
			info, ok := p.StreamInfo("app.out")
			if want := (partition.StreamConfig{MaxRecords: 10, MaxAgeMs: 3_600_000, Compact: true}); !ok || info.Config != want {
				t.Fatalf("partition %d: output app.out %v %+v, want %+v", p.ID(), ok, info.Config, want)
			}
		}
		for i := range 20 {
			key := fmt.Sprintf("k%d", i%7)
			batch := []partition.Input{e.input(t, "app.click", key, i)}
			if i == 5 {
				batch = append(batch, e.input(t, "app.fail", key, true)) // that partition's ticks fail from here
			}
			e.apply(batch)
		}
		dl := e.deadLetters(t, "app.in")
		if len(dl) != 1 || !dl[0].Tick || dl[0].Processor != "app.ticker" || !strings.Contains(dl[0].Error, "tick refused on partition") {
			t.Fatalf("dead letters %+v, want one failed tick", dl)
		}
		var ticked int
		for _, p := range e.eng.Partitions() {
			v, ok := p.Get("app.ticks", []byte(fmt.Sprint(p.ID())))
			if ok {
				ticked++
				var tk []any
				if err := msgpack.Unmarshal(v, &tk); err != nil || len(tk) != 3 {
					t.Fatalf("partition %d ticks %x: %v", p.ID(), v, err)
				}
			}
		}
		if ticked != 3 {
			t.Fatalf("%d partitions ticked, want 3", ticked)
		}
		st := e.eng.ProcessorStatus()
		failing := 0
		for _, s := range st {
			if s.TickFailing {
				failing++
				if s.TickErrors < 10 {
					t.Fatalf("status %+v: want a failed tick per phase since the flag", s)
				}
			}
		}
		if failing != 1 {
			t.Fatalf("statuses %+v: want one partition failing", st)
		}
		if d := e.dump(t); run == 0 {
			ref = d
		} else if d != ref {
			t.Fatalf("sequential run differs (invariant 1):\n%s\nwant:\n%s", d, ref)
		}
	}
}

// TestDialects: Dialect1 (cluster version 3) compiles what it always did and refuses
// Dialect2's arguments and names with the errors it always gave, so a replica of a newer
// binary decides a version-3 deploy as an older one does.
func TestDialects(t *testing.T) {
	for i, c := range []struct {
		src  string
		want string // Dialect1's error; "" compiles
	}{
		{`processors = {"a.p": processor(lambda tx, rec: None, input = "s", tick = None)}`, `processor: unexpected keyword argument "tick"`},
		{`processors = {"a.p": processor(lambda tx, rec: None, input = "s", outputs = ["o"])}`, `processor: unexpected keyword argument "outputs"`},
		{`w = tumbling(10)
processors = {}`, `undefined: tumbling`},
		{`processors = {"a.p": processor(lambda tx, rec: None, input = "s", emits = ["o"])}`, ""},
	} {
		_, err := modules.Compile("app.star", []byte(c.src), modules.Options{Dialect: modules.Dialect1})
		if c.want == "" {
			if err != nil {
				t.Fatalf("#%d: got %v, want it to compile", i, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("#%d: got %v, want %q", i, err, c.want)
		}
	}
}

// TestWindowDeclarationErrors: a bad window aggregate declaration is ErrDeclaration or
// ErrCompile with what is wrong.
func TestWindowDeclarationErrors(t *testing.T) {
	wrap := func(args string) string {
		return "def add(state, rec):\n    return state\ndef res(tx, r):\n    pass\n" +
			"processors = {\"a.p\": processor(add, input = \"s\", " + args + ")}"
	}
	for i, c := range []struct{ src, want string }{
		{wrap(`window = tumbling("1s")`), "needs result"},
		{wrap(`window = session("1s"), result = res`), "merge"},
		{wrap(`window = tumbling("1s"), result = res, merge = add`), "merge"},
		{wrap(`window = tumbling("1.5ms"), result = res`), "whole milliseconds"},
		{wrap(`window = tumbling(0), result = res`), "tumbling size 0"},
		{wrap(`window = hopping(10, 20), result = res`), "slide"},
		{wrap(`window = tumbling(10, results = "some"), result = res`), `want "all" or "final"`},
		{wrap(`result = res`), "for window aggregates"},
		{wrap(`window = 10, result = res`), "want tumbling"},
		{wrap(`window = tumbling(10), result = res, init = set([1])`), "init"},
		{wrap(`window = tumbling(10), result = lambda tx: None`), "want (tx, r)"},
		{wrap(`tick = lambda tx, y: None`), "want (tx)"},
		{wrap(`outputs = {"o": {"retention": 1}}`), "unknown setting"},
		{wrap(`outputs = ["s"]`), `emitted stream "s"`},
	} {
		_, err := modules.Compile("app.star", []byte(c.src), modules.Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("#%d: got %v, want %q", i, err, c.want)
		}
	}
}

// TestWindowFoldFailure: an error or a budget overrun in a window's fold fails the
// record (a dead letter), leaving the window as it was.
func TestWindowFoldFailure(t *testing.T) {
	src := strings.Replace(fmt.Sprintf(windowModule, `tumbling(1000)`, ""), "return state + 1",
		"if rec.value == \"bad\":\n        fail(\"bad record\")\n    if rec.value == \"loop\":\n        while True:\n            pass\n    return state + 1", 1)
	m := mustCompile(t, src, modules.Options{MaxSteps: 10_000})
	e := newEngine(t, m, 1, true)
	log := e.createStreams(t, "clicks")
	for i, v := range []string{"a", "bad", "b", "loop", "c"} {
		log = append(log, e.input(t, "app.click", "k", map[string]any{"v": v, "t": 1000 + i}))
	}
	log = append(log, e.input(t, "app.click", "k", map[string]any{"v": "d", "t": 5000}))
	e.apply(log)
	dl := e.deadLetters(t, "clicks")
	if len(dl) != 2 || !strings.Contains(dl[0].Error, "bad record") || !strings.Contains(dl[1].Error, "steps") {
		t.Fatalf("dead letters %+v", dl)
	}
	if got := streamValues(t, e, "mod.counts"); !strings.Contains(got, "[1000 2000 3 0 true false]") {
		t.Fatalf("results %s: want the window [1000,2000) with 3 records", got)
	}
}

// TestWindowKey: key = fn(rec) groups records by what it returns, and None leaves a record
// out of every window (not late, not counted).
func TestWindowKey(t *testing.T) {
	src := strings.Replace(fmt.Sprintf(windowModule, `tumbling(1000)`, `key = page,`), "def add(state, rec):",
		"def page(rec):\n    if rec.value.startswith(\"bot\"):\n        return None\n    return rec.value[:2]\n\ndef add(state, rec):", 1)
	m := mustCompile(t, src, modules.Options{})
	e := newEngine(t, m, 2, false)
	log := e.createStreams(t, "clicks")
	for i, v := range []string{"p1-a", "p2-b", "bot-c", "p1-d", "p1-e"} {
		log = append(log, e.input(t, "app.click", "u9", map[string]any{"v": v, "t": 1000 + i})) // one partition: one watermark
	}
	log = append(log, e.input(t, "app.click", "u9", map[string]any{"v": "bot", "t": 9000}))
	log = append(log, e.input(t, "app.click", "u9", map[string]any{"v": "zz", "t": 9000}))
	e.apply(log)
	got := streamValues(t, e, "mod.counts")
	if !strings.Contains(got, " p1 @1999 [1000 2000 3 0 true false]") || !strings.Contains(got, " p2 @1999 [1000 2000 1 0 true false]") || strings.Contains(got, "bo") {
		t.Fatalf("results:\n%s", got)
	}
}
