package modules_test

import (
	"os"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/modules"
)

// TestDocExample: the module of docs/procedures.md compiles, and its procedures and
// processor do what the page says.
func TestDocExample(t *testing.T) {
	page, err := os.ReadFile("../../docs/procedures.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(page), "**The module shape.**")
	_, rest, ok2 := strings.Cut(rest, "```python\n")
	src, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("no module in docs/procedures.md")
	}
	m := mustCompile(t, src, modules.Options{})
	e := newEngine(t, m, 3, false)
	log := e.createStreams(t, "app.clicks", "app.page_counts")
	log = append(log, e.input(t, "app.add", "a", map[string]int{"delta": 2}), e.input(t, "app.add", "b", map[string]int{"delta": 5}))
	for _, r := range e.apply(log) {
		if !strings.HasSuffix(r, "<nil>") {
			t.Fatal(r)
		}
	}
	r := e.eng.Execute([]partition.Input{e.input(t, "app.total", "", nil)})[0]
	if r.Err != nil || string(r.Value) != "\x07" {
		t.Fatalf("app.total: got %x %v, want 7", r.Value, r.Err)
	}
}

// TestDocWindowExample: the window aggregate of docs/procedures.md compiles and counts
// clicks per 10 s window, its outputs created by the runtime.
func TestDocWindowExample(t *testing.T) {
	page, err := os.ReadFile("../../docs/procedures.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(page), "**Outputs, tick hooks and windows**")
	_, rest, ok2 := strings.Cut(rest, "```python\n")
	src, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("no window module in docs/procedures.md")
	}
	src += "\ndef click(tx, args):\n    return tx.append(\"app.clicks\", tx.key(), args, args[\"t\"])\nprocedures = {\"app.click\": click}\n"
	m := mustCompile(t, src, modules.Options{})
	e := newEngine(t, m, 2, false)
	log := e.createStreams(t, "app.clicks")
	for i, ts := range []int64{1_000, 3_000, 9_000, 15_000, 45_000} {
		log = append(log, e.input(t, "app.click", "p", map[string]any{"t": ts, "i": i}))
	}
	for _, r := range e.apply(log) {
		if !strings.HasSuffix(r, "<nil>") {
			t.Fatal(r)
		}
	}
	if got := streamValues(t, e, "app.counts"); !strings.Contains(got, "map[final:false n:3 start:0]") || !strings.Contains(got, "map[final:true n:3 start:0]") {
		t.Fatalf("app.counts:\n%s", got)
	}
}
