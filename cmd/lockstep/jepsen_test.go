package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/jepsen"
)

// TestJepsenRunCommand: bad flags are a one-line error; a short run against this binary
// exits 0 and leaves its results folder.
func TestJepsenRunCommand(t *testing.T) {
	bin := proctest.BuildBinary(t)
	proctest.CheckFailure(t, proctest.Run(t, bin, "jepsen", "run", "--workload", "queue"), `unknown workload "queue"`)
	proctest.CheckFailure(t, proctest.Run(t, bin, "jepsen", "run", "--workload", "counter", "--nemesis", "flood"), `unknown nemesis "flood"`)

	results := t.TempDir()
	r := proctest.MustRun(t, bin, "jepsen", "run", "--workload", "counter", "--nemesis", "pause", "--duration", "6s",
		"--interval-min", "1s", "--interval-max", "2s", "--seed", "9", "--workers", "2", "--results", results)
	if !strings.Contains(r.Stdout, "seed 9") || !strings.Contains(r.Stdout, "PASSED") {
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

// TestJepsenRunInterrupted: Ctrl-C (SIGINT) in the middle of a fault of a run on the
// iptables backend ends the run — reported invalid, a non-zero exit (10, check-failed) — and leaves no iptables
// chain of the process behind (the chain's name carries its pid), nor its nodes' private
// folder.
func TestJepsenRunInterrupted(t *testing.T) {
	if err := jepsen.IPTablesUsable(); err != nil {
		if os.Getenv("LOCKSTEP_TEST_IPTABLES") == "1" { // set by .ci/run where iptables works
			t.Fatalf("LOCKSTEP_TEST_IPTABLES=1 but the iptables backend cannot run: %v", err)
		}
		t.Skipf("the iptables backend cannot run here — run the tests as root with iptables installed: %v", err)
	}
	bin := proctest.BuildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), proctest.CommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "jepsen", "run", "--workload", "counter", "--nemesis", "partition",
		"--net", "iptables", "--duration", "60s", "--interval-min", "1s", "--interval-max", "1s", "--workers", "2",
		"--results", t.TempDir())
	cmd.Env = proctest.Env()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var out []string
	var private string
	for sc.Scan() {
		out = append(out, sc.Text())
		if _, dir, ok := strings.Cut(sc.Text(), ", their data in "); ok {
			private = dir
		}
		if strings.Contains(sc.Text(), " start ") { // a fault is in force
			break
		}
	}
	// The chain exists now: one of this process's.
	chains := func() string {
		var b strings.Builder
		for _, table := range []string{"filter", "mangle"} {
			o, err := exec.Command("iptables", "-w", "-t", table, "-S").Output()
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(string(o), "\n") {
				if strings.Contains(l, fmt.Sprintf("LS-%d-", cmd.Process.Pid)) {
					b.WriteString(l + "\n")
				}
			}
		}
		return b.String()
	}
	if chains() == "" {
		t.Fatalf("no chain of pid %d while a fault is in force; output so far:\n%s", cmd.Process.Pid, strings.Join(out, "\n"))
	}
	if private == "" {
		t.Fatalf("the run named no private folder:\n%s", strings.Join(out, "\n"))
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	err = cmd.Wait()
	t.Logf("exit: %v\nstdout:\n%s\nstderr:\n%s", err, strings.Join(out, "\n"), errb.String())
	if ctx.Err() != nil {
		t.Fatal("the run did not end after SIGINT")
	}
	if !strings.Contains(strings.Join(out, "\n"), "INVALID: interrupted") || err == nil {
		t.Errorf("want a non-zero exit and the run reported invalid, interrupted")
	}
	if left := chains(); left != "" {
		t.Fatalf("after SIGINT, rules of the run are left:\n%s", left)
	}
	if _, err := os.Stat(private); !os.IsNotExist(err) {
		t.Fatalf("after SIGINT, the private folder %s is left (%v)", private, err)
	}
}
