package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// TestClusterConfigReplicated: nodes started with different local values of the settings
// that decide replicated results run the cluster's replicated values, never their own: the
// first entry sets them, an admin changes them through the log, every node switches at
// the same index, a bad value is refused and changes nothing, and only an admin may change
// them (DESIGN.md section 10; issue 20, item 7).
func TestClusterConfigReplicated(t *testing.T) {
	local := []int{200, 1 << 20, 300} // each node's own MaxResultBytes
	c := startCluster(t, clusterOptions{nodes: 3, configure: func(i int, cfg *Config) {
		cfg.Replica.MaxResultBytes = local[i]
		cfg.Replica.ProcessorBudget = 10 + i
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.dial(ctx)

	// Every node runs the values of the node that created the cluster.
	first, err := cl.Cluster().Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := first.Get("max-result-bytes")
	if first.Version != 1 || !slices.Contains([]string{"200", "1048576", "300"}, v) {
		t.Fatalf("initial configuration %+v: want version 1 and one node's max-result-bytes", first)
	}
	// The answer comes from the leader once it applied the first entry; a follower may
	// not have applied it yet, and runs its own values (Version 0) until it does.
	waitApplied(t, c, first.Index)
	for i, n := range c.Nodes {
		if got := n.FSM().ClusterConfig(); strconv.Itoa(got.MaxResultBytes) != v || got.Version != 1 {
			t.Errorf("node %d runs %+v, want the cluster's max-result-bytes %s", i, got, v)
		}
	}

	// A change goes through the log; every node applies it at its index.
	got, err := cl.Cluster().SetConfig(ctx, client.Setting{Name: "max-result-bytes", Value: "64"},
		client.Setting{Name: "processor-budget", Value: "5"})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := got.Get("max-result-bytes"); got.Version != 2 || got.Index == 0 || v != "64" {
		t.Fatalf("after set: %+v", got)
	}
	waitApplied(t, c, got.Index)
	for i, n := range c.Nodes {
		conf := n.FSM().ClusterConfig()
		if conf.Version != 2 || conf.Index != got.Index || conf.MaxResultBytes != 64 || conf.ProcessorBudget != 5 {
			t.Errorf("node %d: %+v, want version 2 at index %d, max-result-bytes 64, processor-budget 5", i, conf, got.Index)
		}
	}
	// A 100-byte value makes a result over the limit on every node, whatever its own.
	if _, err := cl.KVPut(ctx, []byte("big"), make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	for i, n := range c.Nodes {
		ncl, err := client.Open(testClientConfig(n.ClientAddr()))
		if err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, 10*time.Second, func() error {
			_, err := client.QueryAs[builtin.KVGetResult](ctx, ncl, builtin.KVGet, []byte("big"), builtin.NoArgs{}, client.ReadAny)
			if !errors.Is(err, client.ErrTooLarge) {
				return fmt.Errorf("node %d (own limit %d): read of a 100-byte value: %v, want ErrTooLarge", i, local[i], err)
			}
			return nil
		})
		ncl.Close()
	}

	// Bad values: refused, typed, and nothing changes.
	bad := [][]client.Setting{
		{{Name: "processor-budget", Value: "0"}},
		{{Name: "max-result-bytes", Value: "99999999"}},
		{{Name: "session-ttl", Value: "10"}},
		{{Name: "no-such-setting", Value: "1"}},
		{{Name: "processor-budget", Value: "7"}, {Name: "max-sessions", Value: "-1"}},
		{{Name: "processor-budget", Value: "7"}, {Name: "processor-budget", Value: "8"}},
	}
	for i, set := range bad {
		if _, err := cl.Cluster().SetConfig(ctx, set...); !errors.Is(err, client.ErrBadArguments) {
			t.Errorf("#%d: set %v: %v, want ErrBadArguments", i, set, err)
		}
	}
	if now, err := cl.Cluster().Config(ctx); err != nil || now.Version != 2 || now.Index != got.Index {
		t.Fatalf("after refused changes: %+v, %v; want version 2 at index %d", now, err, got.Index)
	}

	// Only an admin may change it.
	wcl := c.dialAs(ctx, cl, "other", client.RoleWriter)
	if _, err := wcl.Cluster().SetConfig(ctx, client.Setting{Name: "processor-budget", Value: "9"}); !errors.Is(err, client.ErrPermissionDenied) {
		t.Errorf("a writer's set: %v, want ErrPermissionDenied", err)
	}
	c.waitConverged()
}

// waitApplied waits until every node of c has applied the log up to index.
func waitApplied(t *testing.T, c *testCluster, index uint64) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, func() error {
		for i, n := range c.Nodes {
			if n.FSM().Applied() < index {
				return fmt.Errorf("node %d has applied %d of %d", i, n.FSM().Applied(), index)
			}
		}
		return nil
	})
}
