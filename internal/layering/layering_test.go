package layering

import (
	"fmt"
	"go/build"
	"os"
	"path/filepath"
	"regexp"
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
	"partition":          {},
	"procedures/builtin": {},
	"procedures/schema":  {},
	"procedures":         {"partition", "procedures/builtin", "procedures/schema", "procedures/window", "internal/canon", "internal/planted"},
	"procedures/window":  {"partition", "internal/canon"},
	// procedures/modules runs Starlark modules (go.starlark.net) as procedures and processors.
	"procedures/modules": {"partition", "procedures", "procedures/window"},
	// sql is the SQL layer's front end (the parser behind one file, the planner); sql/plan
	// is what replicas run: the versioned plan format and its operators, no parser.
	"sql":                 {"partition", "procedures", "sql/plan"},
	"sql/plan":            {"partition", "procedures", "procedures/window"},
	"internal/batch":      {"internal/planted"},
	"internal/wire":       {},
	"internal/backup":     {},
	"internal/latency":    {},
	"internal/testutil":   {"internal/certs"},
	"internal/layering":   {},
	"internal/buildinfo":  {},
	"internal/canon":      {},
	"internal/crashstore": {"internal/planted"},
	"internal/faultenv":   {"internal/crashstore"},
	"internal/planted":    {},
	"internal/ratelog":    {},
	"internal/netaddr":    {},
	"sequencer":           {"internal/batch", "internal/netaddr", "internal/planted"},
	"replica":             {"partition", "procedures", "procedures/builtin", "procedures/modules", "procedures/schema", "sql/plan", "internal/batch", "internal/planted"},
	"internal/certs":      {},
	"client":              {"internal/wire", "internal/certs", "procedures/builtin", "procedures/schema"},
	// client/pgsink is a user of the client, as any application is; its typed mode
	// decodes rows with the SQL layer's schemas and row layout (sql/plan, not the parser).
	"client/pgsink": {"client", "sql/plan"},
	// client/profile is the CLI's connection settings: contexts file, precedence.
	"client/profile": {},
	// client/kafka (franz-go) is a user of the client too; it names the built-ins' types
	// and carries one planted bug (lockstep_kafka_splitstep).
	"client/kafka":             {"client", "procedures/builtin", "internal/planted"},
	"internal/testutil/pgtest": {},
	// internal/testutil/sqltest runs a compiled SQL deployment on an in-process replica FSM,
	// for the SQL layer's tests and client/pgsink's typed mode.
	"internal/testutil/sqltest": {"internal/batch", "partition", "procedures", "procedures/builtin", "replica", "sql", "sql/plan"},
	// internal/testutil/proctest is the process-level tests' harness (cmd/lockstep's and
	// tests/system's): it builds and runs the binary, on jepsen.Cluster, with the client.
	"internal/testutil/proctest": {"client", "jepsen", "internal/testutil"},
	// node reads window operators' watermarks (window.ReadOperator) for processor status,
	// and merges modules' procedures into the catalogue (procedures/schema).
	"node": {"internal/backup", "partition", "procedures", "procedures/builtin", "procedures/schema", "procedures/window", "internal/batch",
		"internal/wire", "sequencer", "replica", "client", "internal/buildinfo", "internal/certs", "internal/netaddr", "internal/planted", "internal/ratelog",
		"node/statuspage", "sql", "sql/plan", "connect"},
	// connect runs, inside a node, the workers of the sources the log defines (client/kafka).
	"connect": {"client", "client/kafka", "sql/plan"},
	// node/runner is `lockstep node` for any binary: flags, config file, signals, rebuild.
	"node/runner": {"node", "procedures", "procedures/modules", "internal/faultenv", "internal/netaddr"},
	// node/statuspage renders the admin port's HTML status page from plain values.
	"node/statuspage": {},
	"cmd/lockstep": {"internal/backup", "internal/cliout", "internal/clusterstatus", "internal/restartplan", "internal/recordjson", "internal/sqlshell", "internal/invoke", "client", "client/pgsink", "client/kafka", "client/profile", "node", "node/runner", "procedures", "procedures/builtin", "procedures/schema", "jepsen", "internal/certs", "benchmarks/loadgen", "benchmarks/report", "internal/demo",
		"benchmarks/nexmark", "benchmarks/nexmark/feed", "benchmarks/nexmark/goqueries", "benchmarks/nexmark/nexbench", "sql"},
	"benchmarks":         {"client", "client/pgsink", "internal/latency", "benchmarks/loadgen"},
	"benchmarks/loadgen": {"client", "procedures/builtin", "internal/latency"},
	// benchmarks/nexmark is the Nexmark generator, record layout and batch reference: plain
	// data, no Lockstep package; benchmarks/nexmark/goqueries the queries as processors.
	"benchmarks/nexmark":           {},
	"benchmarks/nexmark/goqueries": {"benchmarks/nexmark", "partition", "procedures", "procedures/window"},
	// benchmarks/nexmark/feed appends generated events through the client.
	"benchmarks/nexmark/feed": {"benchmarks/nexmark", "client", "procedures/builtin"},
	// benchmarks/modbench is one processor in Starlark (module.star) and in Go; abrun runs
	// both on real node processes (jepsen.Cluster) from a client in its own process;
	// cmd/modbench-node is `lockstep node` plus the Go processor, so the product binary
	// carries no benchmark code; cmd/modbench is the driver.
	"benchmarks/modbench":                   {"partition", "procedures"},
	"benchmarks/modbench/abrun":             {"benchmarks/modbench", "client", "jepsen", "procedures/builtin"},
	"benchmarks/modbench/cmd/modbench":      {"benchmarks/modbench/abrun"},
	"benchmarks/modbench/cmd/modbench-node": {"benchmarks/modbench", "node/runner", "procedures"},
	// benchmarks/nexmark/nexbench runs a query, as Go processors or deployed as SQL, on
	// node processes (started through jepsen's cluster harness) or an embedded cluster
	// and measures it: `lockstep bench nexmark`'s logic, and its bench node's (node/runner).
	"benchmarks/nexmark/nexbench": {"benchmarks/nexmark", "benchmarks/nexmark/feed", "benchmarks/nexmark/goqueries", "client",
		"jepsen", "node", "node/runner", "procedures", "procedures/builtin", "sql", "sql/plan", "internal/latency", "internal/chart"},
	// benchmarks/report reads the node's metric names (node.Metric...), nothing else of it.
	"benchmarks/report":   {"node", "benchmarks/loadgen", "internal/chart", "internal/latency"},
	"jepsen":              {"client", "procedures/builtin", "internal/chart", "internal/faultenv"},
	"internal/chart":      {},
	"internal/demo":       {"client", "client/pgsink", "node", "procedures", "procedures/builtin", "benchmarks/loadgen"}, // `lockstep demo`
	"examples/customproc": {"client", "node", "node/runner", "partition", "procedures", "procedures/builtin", "procedures/window"},
	// examples/upgradeapp: one application in three builds (tags lockstep_upgrade_old, lockstep_upgrade_next), the sides of rolling upgrades.
	"examples/upgradeapp": {"node", "node/runner", "partition", "procedures"},
	// tests/system is test files only (see withTests): process-level tests drive the binary
	// through jepsen.Cluster and the client, and read what a test truly needs besides (a
	// node's sentinels and constants, the shared test certificates, the sink's database).
	"tests/system": {"internal/backup", "client", "client/pgsink", "sql/plan", "jepsen", "node", "sequencer", "procedures/builtin", "internal/wire",
		"internal/certs", "internal/testutil", "internal/testutil/pgtest", "internal/testutil/proctest"},
	// tests/packaging is test files only: it checks the deployment files (Dockerfile,
	// deploy/) against the binary, which it builds and runs through proctest.
	"tests/packaging": {"node", "internal/certs", "internal/testutil", "internal/testutil/proctest"},
	// cmd/lockstep's library packages: internal/cliout renders --output table|json;
	// internal/clusterstatus is `cluster status` (rows, health, table); internal/restartplan
	// the rolling restart; internal/recordjson the JSON lines of stream records;
	// internal/sqlshell runs `lockstep sql` scripts and the shell; internal/invoke calls a
	// procedure by its schemas.
	"internal/cliout":        {"client", "client/kafka", "client/profile", "internal/certs", "procedures/builtin", "procedures/schema"},
	"internal/clusterstatus": {"client", "internal/cliout", "node"},
	"internal/restartplan":   {"client", "internal/cliout", "internal/clusterstatus", "procedures"},
	"internal/recordjson":    {"client", "internal/cliout", "procedures", "procedures/schema"},
	"internal/sqlshell":      {"client", "internal/cliout", "sql"},
	"internal/invoke":        {"client", "procedures", "procedures/schema"},
}

// forbidden lists, for some packages, imports they must not make directly whatever
// allowed says, third-party ones included (an import path, or any path under it): the
// binary is glue over library packages, so the PostgreSQL driver, the Prometheus text
// parser and the crash-model store stay in the libraries that use them (issue 21).
var forbidden = map[string][]string{
	"cmd/lockstep": {"github.com/jackc/pgx", "github.com/prometheus/common/expfmt", module + "internal/crashstore"},
}

// tagSets are the build-tag sets the import rules are checked under: the default build,
// the determinism-test build, each planted bug's build (internal/planted) and
// examples/upgradeapp's old and next builds. A file behind a build tag imports only in its
// tag's build, so each set is checked on its own.
// TestTagSetsCoverEveryTag keeps the list complete.
var tagSets = [][]string{
	nil,
	{"lockstep_nondet"},
	{"jepsen_ackcache"},
	{"jepsen_clockbug"},
	{"jepsen_lostwrite"},
	{"jepsen_nodedup"},
	{"jepsen_nosync"},
	{"jepsen_staleread"},
	{"lockstep_upgrade_old"},
	{"lockstep_kafka_splitstep"},
	{"lockstep_upgrade_next"},
}

// withTests are the packages whose test files' imports are checked too: packages made of
// tests, whose rule would otherwise hold nothing.
var withTests = []string{"tests/system", "tests/packaging"}

// TestImportRules: every package imports only what its layer may (DESIGN.md section 3:
// dependencies point one way; nothing under partition/ knows about Raft or TCP; the client
// speaks the wire protocol only; the binary goes through client, node and procedures), in
// every build-tag set.
func TestImportRules(t *testing.T) {
	for _, tags := range tagSets {
		t.Run("tags="+strings.Join(tags, ","), func(t *testing.T) {
			violations, found := checkImports(moduleRoot(t), tags)
			for _, v := range violations {
				t.Error(v)
			}
			if len(tags) > 0 {
				return
			}
			for rel := range allowed {
				if !found[rel] {
					t.Errorf("the table has a rule for %s, which is not a package of the module", rel)
				}
			}
		})
	}
}

// TestTagSetsCoverEveryTag: every build tag of the module's own (lockstep_*, jepsen_*)
// that a //go:build line names is in tagSets, so no tagged file escapes the import check.
func TestTagSetsCoverEveryTag(t *testing.T) {
	checked := map[string]bool{}
	for _, tags := range tagSets {
		for _, tag := range tags {
			checked[tag] = true
		}
	}
	for tag, file := range projectTags(t, moduleRoot(t)) {
		if !checked[tag] {
			t.Errorf("build tag %s (%s) is in no tag set of the import check: add it to tagSets", tag, file)
		}
	}
}

// TestImportRulesCatchTaggedImport: the check reads files behind a build tag only in that
// tag's set, and flags a forbidden import there (a checker must be able to fail).
func TestImportRulesCatchTaggedImport(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "partition")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod":                      "module github.com/lockstepdb/lockstep\n",
		"partition/p.go":              "package partition\n",
		"partition/planted_on.go":     "//go:build jepsen_nosync\n\npackage partition\n\nimport _ \"github.com/lockstepdb/lockstep/sequencer\"\n",
		"partition/planted_off_ok.go": "//go:build !jepsen_nosync\n\npackage partition\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := checkImports(root, nil); len(v) != 0 {
		t.Fatalf("default build: got %v, want no violation", v)
	}
	v, _ := checkImports(root, []string{"jepsen_nosync"})
	if len(v) != 1 || !strings.Contains(v[0], "partition imports sequencer") {
		t.Fatalf("jepsen_nosync build: got %v, want the forbidden import of sequencer", v)
	}
}

// TestImportRulesCatchForbiddenImport: a forbidden import is flagged, a third-party one
// too, though allowed does not restrict those (a checker must be able to fail).
func TestImportRulesCatchForbiddenImport(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "cmd", "lockstep"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod":               "module github.com/lockstepdb/lockstep\n",
		"cmd/lockstep/main.go": "package main\n\nimport _ \"github.com/jackc/pgx/v5\"\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v, _ := checkImports(root, nil)
	if len(v) != 1 || !strings.Contains(v[0], "cmd/lockstep imports github.com/jackc/pgx/v5, which it must not import") {
		t.Fatalf("got %v, want the forbidden import of pgx", v)
	}
}

// moduleRoot is the module's root folder.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// checkImports lists every broken import rule of the module at root when built with tags
// (a package without a rule, an import its rule forbids) and returns the packages found.
func checkImports(root string, tags []string) (violations []string, found map[string]bool) {
	ctx := build.Default
	ctx.BuildTags = tags
	found = map[string]bool{}
	err := walkPackages(root, func(path string) {
		pkg, err := ctx.ImportDir(path, 0)
		if err != nil {
			return // no Go files here in this build
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		rules, ok := allowed[rel]
		if !ok {
			violations = append(violations, fmt.Sprintf("package %s has no import rule: add it to the table", rel))
			return
		}
		found[rel] = true
		imports := pkg.Imports
		if slices.Contains(withTests, rel) {
			imports = append(append(slices.Clone(imports), pkg.TestImports...), pkg.XTestImports...)
		}
		for _, imp := range imports {
			dep, ok := strings.CutPrefix(imp, module)
			if ok && !slices.Contains(rules, dep) {
				violations = append(violations, fmt.Sprintf("%s imports %s; it may import only %v", rel, dep, rules))
			}
			for _, f := range forbidden[rel] {
				if imp == f || strings.HasPrefix(imp, f+"/") {
					violations = append(violations, fmt.Sprintf("%s imports %s, which it must not import (forbidden: %v)", rel, imp, forbidden[rel]))
				}
			}
		}
	})
	if err != nil {
		violations = append(violations, err.Error())
	}
	return violations, found
}

// walkPackages calls visit with every folder of the module at root that may hold a
// package: not hidden, not testdata or docs, not another module.
func walkPackages(root string, visit func(dir string)) error {
	return filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
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
		visit(path)
		return nil
	})
}

// projectTags maps each build tag of the project's own that a Go file's //go:build line
// names to one file that names it.
func projectTags(t *testing.T, root string) map[string]string {
	t.Helper()
	tags := map[string]string{}
	tagRE := regexp.MustCompile(`\b(lockstep_\w+|jepsen_\w+)\b`)
	err := walkPackages(root, func(dir string) {
		names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, name := range names {
			text, err := os.ReadFile(name)
			if err != nil {
				t.Error(err)
				continue
			}
			for _, line := range strings.Split(string(text), "\n") {
				if !strings.HasPrefix(line, "//go:build ") {
					continue
				}
				for _, tag := range tagRE.FindAllString(line, -1) {
					rel, _ := filepath.Rel(root, name)
					tags[tag] = rel
				}
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return tags
}
