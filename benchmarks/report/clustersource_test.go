package report

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/node"
)

// TestClusterSource: an embedded cluster's running nodes answer with their registries,
// one entry per node under its id, and a node that stopped is left out.
func TestClusterSource(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lc, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: 2, Node: node.Config{Logger: testutil.Logger(t, slog.LevelWarn)}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	src := ClusterSource(lc)
	got, err := src(ctx)
	if err != nil || len(got) != 2 || got[0].Node != lc.Nodes[0].ID() || got[1].Node != lc.Nodes[1].ID() {
		t.Fatalf("got %d nodes (%v), want both", len(got), err)
	}
	if got[0].Families[node.MetricBuildInfo] == nil {
		t.Errorf("no %s among node 0's families", node.MetricBuildInfo)
	}
	lc.Kill(1)
	if got, err = src(ctx); err != nil || len(got) != 1 || got[0].Node != lc.Nodes[0].ID() {
		t.Fatalf("after a kill: %d nodes (%v), want node 0 alone", len(got), err)
	}
}
