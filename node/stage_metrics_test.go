package node

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/lockstepdb/lockstep/client"
)

// TestCommitStageMetrics: under load on a three-node cluster, each node's /metrics has
// the commit round's stages as histograms with observations where the stage happens:
// queue, raft, reply and leader_persist on the leader, a replication round trip to each
// follower, follower_persist on the followers, and apply everywhere.
func TestCommitStageMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lc := startAdminCluster(t, ctx)
	hc := testHTTPClient(t)
	leader, err := lc.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.Dial(ctx, testClientConfig(lc.ClientAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for range 25 {
				if _, err := cl.CounterAdd(ctx, fmt.Sprintf("c%d", w), 1); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, err := lc.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}

	for i, n := range lc.Nodes {
		fams := scrapeMetrics(t, hc, n.AdminAddr())
		stages := histograms(fams["lockstep_commit_stage_seconds"], "stage")
		want := []string{"follower_persist"}
		if i == leader {
			want = []string{"queue", "raft", "reply", "leader_persist"}
			repl := histograms(fams["lockstep_replication_rpc_seconds"], "peer")
			for j, f := range lc.Nodes {
				if j != leader && !observed(repl[f.ID()]) {
					t.Errorf("leader %s: no replication round trips to %s: %v", n.ID(), f.ID(), repl)
				}
			}
		}
		for _, s := range want {
			if !observed(stages[s]) {
				t.Errorf("%s (leader %t): stage %s not observed: %v", n.ID(), i == leader, s, stages[s])
			}
		}
		if f := fams["lockstep_apply_seconds"]; f == nil || !observed(f.GetMetric()[0].GetHistogram()) {
			t.Errorf("%s: lockstep_apply_seconds not observed", n.ID())
		}
	}
}

// histograms returns fam's histograms by the value of label.
func histograms(fam *dto.MetricFamily, label string) map[string]*dto.Histogram {
	out := map[string]*dto.Histogram{}
	for _, m := range fam.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				out[l.GetValue()] = m.GetHistogram()
			}
		}
	}
	return out
}

// observed reports whether h has observations of non-zero total time whose last bucket
// holds no more than the count.
func observed(h *dto.Histogram) bool {
	b := h.GetBucket()
	return h.GetSampleCount() > 0 && h.GetSampleSum() > 0 && len(b) > 0 && b[len(b)-1].GetCumulativeCount() <= h.GetSampleCount()
}
