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
