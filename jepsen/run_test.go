package jepsen

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// short runs one short harness run and fails the test unless it is valid and passes.
func short(t *testing.T, cfg Config) *Report {
	t.Helper()
	if testing.Short() {
		t.Skip("real-process harness run")
	}
	cfg.Bin = testBin
	cfg.Results = t.TempDir()
	if cfg.Duration == 0 {
		cfg.Duration = 15 * time.Second
	}
	cfg.IntervalMin, cfg.IntervalMax = 2*time.Second, 4*time.Second
	cfg.Workers = 4
	cfg.Out = tWriter{t}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"summary.json", "summary.txt", "history.jsonl", "timeline.jsonl", "schedule.json"} {
		if _, err := os.Stat(filepath.Join(rep.Dir, f)); err != nil {
			t.Errorf("results: %v", err)
		}
	}
	return rep
}

// tWriter sends progress lines to t.Log.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// mustPass fails the test unless rep is valid and passed.
func mustPass(t *testing.T, rep *Report) {
	t.Helper()
	if !rep.Valid || !rep.Passed {
		t.Fatalf("run did not pass:\n%s", rep.Text())
	}
}

// TestRegisterPartition: the register workload under partitions stays linearizable
// (DESIGN.md invariant 5).
func TestRegisterPartition(t *testing.T) {
	mustPass(t, short(t, Config{Workload: "register", Nemesis: "partition", Seed: 1}))
}

// TestCheckersCatchLostWrites proves the register and counter checkers can fail: nodes
// built with the planted bug jepsen_lostwrite acknowledge every tenth kv.put and
// counter.add without committing it, and each workload's verdict must say so, with no
// fault injected at all.
func TestCheckersCatchLostWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process harness run")
	}
	bin, err := buildLockstep(t.TempDir(), "jepsen_lostwrite")
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct{ workload, checker, artifact string }{
		{"register", "linearizable", "linearizability.html"},
		{"counter", "counter-bounds", ""},
	} {
		rep, err := Run(context.Background(), Config{Bin: bin, Results: t.TempDir(), Workload: tc.workload,
			Duration: 4 * time.Second, Workers: 4, Seed: 7, Out: tWriter{t}})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Valid || rep.Passed {
			t.Fatalf("#%d: want a valid, failed run:\n%s", i, rep.Text())
		}
		for _, v := range rep.Verdicts {
			if v.Checker == tc.checker && v.Valid {
				t.Fatalf("#%d: checker %s missed the lost writes:\n%s", i, tc.checker, rep.Text())
			}
		}
		if tc.artifact != "" {
			if _, err := os.Stat(filepath.Join(rep.Dir, tc.artifact)); err != nil {
				t.Errorf("#%d: %v", i, err)
			}
		}
	}
}
