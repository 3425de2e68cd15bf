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
			var v []any
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
