package abrun

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/jepsen"
)

// buildBinaries builds ./cmd/lockstep and modbench-node into a temp dir of the test.
func buildBinaries(t *testing.T) (lockstep, gonode string) {
	t.Helper()
	dir := t.TempDir()
	var wg sync.WaitGroup
	var errL error
	wg.Add(1)
	go func() {
		defer wg.Done()
		lockstep, errL = jepsen.BuildLockstep(dir, false)
	}()
	gonode = filepath.Join(dir, "modbench-node")
	out, err := exec.Command("go", "build", "-o", gonode, "github.com/lockstepdb/lockstep/benchmarks/modbench/cmd/modbench-node").CombinedOutput()
	wg.Wait()
	if err != nil {
		t.Fatalf("go build modbench-node: %v\n%s", err, out)
	}
	if errL != nil {
		t.Fatal(errL)
	}
	return lockstep, gonode
}

// TestPairsTiny is the benchmark at a size CI affords: one pair on one node and one on
// three, 2,300 records each (three windows). Every run must have appended every record, drained
// on every node, counted what modbench.Expected predicts with the engine's own code
// (checkResult, in pages of 7 rows so that the paging runs), and measured something.
func TestPairsTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	lockstep, gonode := buildBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for _, nodes := range []int{1, 3} {
		base := Config{LockstepBin: lockstep, GoNodeBin: gonode, Dir: t.TempDir(), Nodes: nodes,
			Records: 2300, Batch: 100, Workers: 2, Partitions: 2, CheckPage: 7}
		rs, err := Pairs(ctx, base, []string{EngineStarlark, EngineGo}, 1, func(r Result) { t.Logf("%+v", r) })
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 2 {
			t.Fatalf("%d nodes: %d results, want 2", nodes, len(rs))
		}
		for i, r := range rs {
			wantOrigin := map[string]string{EngineStarlark: "module modbench", EngineGo: "binary"}[r.Engine]
			if r.Appended != 2300 || r.Nodes != nodes || r.RecordsPerSec <= 0 || r.Seconds <= 0 || !strings.HasPrefix(r.Origin, wantOrigin) {
				t.Errorf("#%d: got %+v, want 2300 records on %d nodes run by %s", i, r, nodes, wantOrigin)
			}
		}
		s := Summarize(rs, EngineGo)
		if len(s) != 2 || s[1].Engine != EngineGo || s[1].SpeedVsRef != 1 {
			t.Errorf("%d nodes: summary %+v", nodes, s)
		}
	}
}

// TestMaxAppendBoundsTheRun checks that MaxAppend ends the appends early and the run
// still drains and checks the records that were appended.
func TestMaxAppendBoundsTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	lockstep, gonode := buildBinaries(t)
	r, err := Run(context.Background(), Config{Engine: EngineGo, LockstepBin: lockstep, GoNodeBin: gonode, Dir: t.TempDir(),
		Records: MaxRecords, MaxAppend: 300 * time.Millisecond, Batch: 50, Workers: 1, Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Appended <= 0 || r.Appended >= MaxRecords || r.Appended%50 != 0 {
		t.Errorf("appended %d, want a positive multiple of 50 well below %d", r.Appended, MaxRecords)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Engine: EngineGo, LockstepBin: "l", GoNodeBin: "g", Dir: "d"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(*Config){
		func(c *Config) { c.Engine = "lua" },
		func(c *Config) { c.LockstepBin = "" },
		func(c *Config) { c.GoNodeBin = "" },
		func(c *Config) { c.Dir = "" },
		func(c *Config) { c.Nodes = 10 },
		func(c *Config) { c.Partitions = -1 },
		func(c *Config) { c.Records = MaxRecords + 1 },
		func(c *Config) { c.Batch = MaxBatch + 1 },
		func(c *Config) { c.Workers = 65 },
		func(c *Config) { c.MaxAppend = -time.Second },
		func(c *Config) { c.ProfileFile, c.Nodes = "p", 3 },
		func(c *Config) { c.CheckPage = 50_001 },
	}
	for i, f := range bad {
		c := ok
		f(&c)
		if err := c.Validate(); !errors.Is(err, ErrBadConfig) {
			t.Errorf("#%d: got %v, want ErrBadConfig", i, err)
		}
		if _, err := Run(context.Background(), c); !errors.Is(err, ErrBadConfig) {
			t.Errorf("#%d: Run got %v, want ErrBadConfig", i, err)
		}
	}
	if _, err := Pairs(context.Background(), ok, nil, 1, nil); !errors.Is(err, ErrBadConfig) {
		t.Errorf("Pairs with no engine: got %v, want ErrBadConfig", err)
	}
}
