package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
)

// TestCLISQL runs `lockstep sql` (the real binary) against three real nodes: -e deploys a
// stream, -f runs a script of a view and inserts, a SELECT answers from state in JSON and
// in a table, SHOW and EXPLAIN list and describe, and a bad statement of a script fails
// naming its line and column in the script, having deployed nothing.
func TestCLISQL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 3)
	addrs := c.AddrFlag()
	run := func(args ...string) proctest.Result {
		t.Helper()
		return proctest.MustRun(t, bin, append(append([]string{"sql"}, args...), "--addr", addrs)...)
	}
	if r := run("-e", "CREATE STREAM ev (k text, v bigint) WITH (key = 'k')"); strings.TrimSpace(r.Stdout) != "deployed ev" {
		t.Fatalf("CREATE STREAM: %v", r)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "views.sql")
	if err := os.WriteFile(script, []byte(`-- a view and some rows
CREATE MATERIALIZED VIEW big AS
  SELECT k, v * 2 AS twice FROM ev WHERE v > 1;
INSERT INTO ev VALUES ('a', 1), ('b', 2);
INSERT INTO ev VALUES ('c', 3);
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run("-f", script); r.Stdout != "deployed big\ninserted 2 rows\ninserted 1 rows\n" {
		t.Fatalf("-f: %v", r)
	}
	var rows []map[string]any
	r := run("-o", "json", "-e", "SELECT k, twice FROM big ORDER BY twice DESC")
	if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil {
		t.Fatalf("-o json: %v: %v", err, r)
	}
	if len(rows) != 2 || rows[0]["k"] != "c" || rows[0]["twice"] != 6.0 || rows[1]["k"] != "b" {
		t.Fatalf("SELECT -o json: %v", rows)
	}
	if r := run("-e", "SELECT k, twice FROM big WHERE k = 'b'"); !strings.Contains(r.Stdout, "TWICE") || !strings.Contains(r.Stdout, "b  4") || !strings.Contains(r.Stdout, "(1 rows)") {
		t.Fatalf("SELECT table: %v", r)
	}
	if r := run("-e", "SHOW STREAMS; SHOW VIEWS"); !strings.Contains(r.Stdout, "ev") || !strings.Contains(r.Stdout, "big") || !strings.Contains(r.Stdout, "k text, v bigint") {
		t.Fatalf("SHOW: %v", r)
	}
	if r := run("--read-any", "-e", "EXPLAIN big"); !strings.Contains(r.Stdout, "big.project") {
		t.Fatalf("EXPLAIN: %v", r)
	}
	bad := filepath.Join(dir, "bad.sql")
	if err := os.WriteFile(bad, []byte("SHOW VIEWS;\nCREATE MATERIALIZED VIEW v2 AS\n  SELECT nosuch FROM ev;\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := proctest.Run(t, bin, "sql", "-f", bad, "--addr", addrs)
	proctest.CheckFailure(t, f, "line 3, column 10")
	if !strings.Contains(f.Stderr, "nosuch") {
		t.Fatalf("bad script: %v", f)
	}
	r = run("-o", "json", "-e", "SHOW VIEWS")
	if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, row := range rows {
		names = append(names, row["name"].(string))
	}
	if !slices.Equal(names, []string{"big"}) {
		t.Fatalf("views after the refused script: %v", names)
	}
}
