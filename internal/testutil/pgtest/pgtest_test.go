package pgtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"testing"
)

// TestNew: the database answers, in its own schema.
func TestNew(t *testing.T) {
	db := New(t)
	db.Exec(t, "CREATE TABLE x (a int)")
	var schema string
	if err := db.Connect(t).QueryRow(context.Background(), "SELECT table_schema FROM information_schema.tables WHERE table_name = 'x'").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if schema != db.Schema {
		t.Fatalf("table x in schema %q, want %q", schema, db.Schema)
	}
}

// TestUnreachableServerFails: with LOCKSTEP_TEST_PG_DSN set (as in CI), a server that
// cannot be reached fails the test instead of skipping it.
func TestUnreachableServerFails(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") == "1" {
		New(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestUnreachableServerFails$", "-test.v")
	cmd.Env = append(os.Environ(), "PGTEST_CHILD=1", EnvDSN+"=postgres://u@127.0.0.1:1/db?connect_timeout=2")
	out, err := cmd.CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte("--- FAIL")) || bytes.Contains(out, []byte("--- SKIP")) {
		t.Fatalf("want the child test to fail, not pass or skip: %v\n%s", err, out)
	}
}
