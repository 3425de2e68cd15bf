package feed

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// TestPace: with Pace, chunk k is due k×Batch/Pace after the start and not appended
// before; Sending sees every chunk once with its due time; a bad pace is refused.
func TestPace(t *testing.T) {
	for _, p := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := (Config{Generator: nexmark.Config{}, Events: 10, Pace: p}).Validate(); !errors.Is(err, ErrBadConfig) {
			t.Errorf("pace %v: %v, want ErrBadConfig", p, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cluster, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: 1, Node: node.Config{Logger: testutil.Logger(t, slog.LevelWarn)}})
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	c, err := client.Dial(ctx, cluster.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := CreateStreams(ctx, c, builtin.StreamRetention{}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	due := map[int64]time.Time{}
	res, err := Run(ctx, []*client.Client{c}, Config{Generator: nexmark.Config{}, Events: 100, Batch: 10, Workers: 2, Pace: 200,
		Sending: func(from, to int64, at time.Time) {
			mu.Lock()
			defer mu.Unlock()
			if _, dup := due[from]; dup || to-from != 10 {
				t.Errorf("chunk [%d, %d) again or of the wrong size", from, to)
			}
			due[from] = at
		}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Events != 100 || len(due) != 10 {
		t.Fatalf("%+v, %d chunks sent", res, len(due))
	}
	if res.Elapsed < 450*time.Millisecond { // the last chunk is due 9×10/200 s = 450 ms in
		t.Fatalf("paced run took %v, want at least 450 ms", res.Elapsed)
	}
	first := due[0]
	for k := int64(1); k < 10; k++ {
		if d := due[10*k].Sub(first); d < time.Duration(k)*50*time.Millisecond-5*time.Millisecond || d > time.Duration(k)*50*time.Millisecond+5*time.Millisecond {
			t.Errorf("chunk %d due %v after chunk 0, want %v", k, d, time.Duration(k)*50*time.Millisecond)
		}
	}
}
