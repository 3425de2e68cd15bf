package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJepsenRunCommand: bad flags are a one-line error; a short run against this binary
// exits 0 and leaves its results folder.
func TestJepsenRunCommand(t *testing.T) {
	bin := buildBinary(t)
	checkFailure(t, run(t, bin, "jepsen", "run", "--workload", "queue"), `unknown workload "queue"`)
	checkFailure(t, run(t, bin, "jepsen", "run", "--workload", "counter", "--nemesis", "flood"), `unknown nemesis "flood"`)

	results := t.TempDir()
	r := mustRun(t, bin, "jepsen", "run", "--workload", "counter", "--nemesis", "pause", "--duration", "6s",
		"--interval-min", "1s", "--interval-max", "2s", "--seed", "9", "--workers", "2", "--results", results)
	if !strings.Contains(r.stdout, "seed 9") || !strings.Contains(r.stdout, "PASSED") {
		t.Fatalf("want the seed and PASSED on stdout: %v", r)
	}
	runs, _ := filepath.Glob(filepath.Join(results, "counter-pause-9-*", "summary.json"))
	if len(runs) != 1 {
		t.Fatalf("results folder: %v", runs)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(runs[0]), "history.jsonl")); err != nil {
		t.Fatal(err)
	}
}
