package main

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/internal/demo"
)

// TestDemoCommand runs the README's first command, `lockstep demo`, shortened: the Voter
// workload on 3 nodes with the leader killed, and the exactly-once check, whose failure
// would be the command's error (its exit code).
func TestDemoCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster for about 10 s")
	}
	var out bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &out
	err := app.RunContext(context.Background(), []string{"lockstep", "demo", "--duration", "4s", "--clients", "8"})
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{"starting a 3-node cluster", "killed the leader", "restarted n", "exactly-once check passed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// The last live line agrees with the summary.
	live := regexp.MustCompile(`acknowledged (\d+) *\n`).FindAllStringSubmatch(out.String(), -1)
	sum := regexp.MustCompile(`\nacknowledged +(\d+) \(`).FindStringSubmatch(out.String())
	if len(live) == 0 || sum == nil || live[len(live)-1][1] != sum[1] {
		t.Errorf("last live line %q, summary %q:\n%s", live, sum, out.String())
	}
}

// TestDemoCommandBadFlags: bad flags fail with a clear error before or instead of a run.
func TestDemoCommandBadFlags(t *testing.T) {
	var out bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &out
	err := app.RunContext(context.Background(), []string{"lockstep", "demo", "--workload", "poker"})
	if err == nil || !strings.Contains(err.Error(), `unknown --workload "poker"`) {
		t.Fatalf("got %v", err)
	}
	err = app.RunContext(context.Background(), []string{"lockstep", "demo", "--sink-dsn", "postgres://127.0.0.1:1/x"})
	if err == nil || !strings.Contains(err.Error(), "--sink-dsn needs --workload pipeline") {
		t.Fatalf("got %v", err)
	}
	for _, args := range [][]string{{"--nodes", "0"}, {"--clients", "0"}, {"--duration", "0s"}, {"--partitions", "0"},
		{"--workload", "pipeline", "--sink-dsn", "postgres://127.0.0.1:1/x", "--sink-schema", "a.b"}} {
		err = app.RunContext(context.Background(), append([]string{"lockstep", "demo"}, args...))
		if !errors.Is(err, demo.ErrBadConfig) {
			t.Errorf("%v: got %v, want demo.ErrBadConfig", args, err)
		}
	}
	err = app.RunContext(context.Background(), []string{"lockstep", "demo", "--workload", "pipeline", "--sink-dsn", "postgres://127.0.0.1:1/x", "--nodes", "1", "--duration", "1s"})
	if err == nil || !strings.Contains(err.Error(), "sink's database") {
		t.Fatalf("bad DSN: got %v", err)
	}
}
