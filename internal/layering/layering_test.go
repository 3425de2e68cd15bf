package layering

import (
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/lockstepdb/lockstep/"

// allowed lists, for each package of the module, the module's packages it may import
// directly (test files aside). Third-party and standard packages are not restricted here.
// A package of the module missing from this table fails the test, so a new package gets
// a rule when it is made.
var allowed = map[string][]string{
	"partition":           {},
	"procedures/builtin":  {},
	"procedures/schema":   {},
	"procedures":          {"partition", "procedures/builtin", "procedures/schema", "procedures/window", "internal/canon"},
	"procedures/window":   {"partition", "internal/canon"},
	"internal/batch":      {},
	"internal/wire":       {},
	"internal/latency":    {},
	"internal/testutil":   {"internal/certs"},
	"internal/layering":   {},
	"internal/buildinfo":  {},
	"internal/canon":      {},
	"internal/crashstore": {},
	"internal/ratelog":    {},
	"sequencer":           {"internal/batch"},
	"replica":             {"partition", "procedures", "procedures/builtin", "internal/batch"},
	"internal/certs":      {},
	"client":              {"internal/wire", "internal/certs", "procedures/builtin", "procedures/schema"},
	// client/pgsink is a user of the client, as any application is.
	"client/pgsink":            {"client"},
	"internal/testutil/pgtest": {},
	// node reads window operators' watermarks (window.ReadOperator) for processor status.
	"node": {"partition", "procedures", "procedures/builtin", "procedures/window", "internal/batch",
		"internal/wire", "sequencer", "replica", "client", "internal/buildinfo", "internal/certs", "internal/ratelog"},
	"cmd/lockstep":        {"client", "client/pgsink", "node", "procedures", "procedures/builtin", "procedures/schema", "internal/latency", "jepsen", "internal/certs", "internal/crashstore", "benchmarks/loadgen", "internal/chart"},
	"benchmarks":          {"client", "client/pgsink", "internal/latency", "benchmarks/loadgen"},
	"benchmarks/loadgen":  {"client", "procedures/builtin", "internal/latency"},
	"jepsen":              {"client", "procedures/builtin", "internal/chart"},
	"internal/chart":      {},
	"examples/customproc": {"client", "node", "partition", "procedures", "procedures/builtin", "procedures/window"},
}

// TestImportRules: every package imports only what its layer may (DESIGN.md section 3:
// dependencies point one way; nothing under partition/ knows about Raft or TCP; the client
// speaks the wire protocol only; the binary goes through client, node and procedures).
func TestImportRules(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "docs") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
			return filepath.SkipDir // another module (benchmarks/peers, ...)
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go files here
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		rules, ok := allowed[rel]
		if !ok {
			t.Errorf("package %s has no import rule: add it to the table", rel)
			return nil
		}
		found[rel] = true
		for _, imp := range pkg.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if ok && !slices.Contains(rules, dep) {
				t.Errorf("%s imports %s; it may import only %v", rel, dep, rules)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel := range allowed {
		if !found[rel] {
			t.Errorf("the table has a rule for %s, which is not a package of the module", rel)
		}
	}
}
