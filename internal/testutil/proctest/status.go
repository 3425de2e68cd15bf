package proctest

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
)

// ClusterStatus runs `cluster status --output json` at addrs, which must succeed, and
// decodes its output into a T (the test package's type of that output).
func ClusterStatus[T any](t testing.TB, bin, addrs string) T {
	t.Helper()
	return decodeStatus[T](t, MustRun(t, bin, statusArgs(addrs)...))
}

// StatusAnyHealth is ClusterStatus whatever the cluster's health (the exit code says
// which problem; the JSON is printed either way).
func StatusAnyHealth[T any](t testing.TB, bin, addrs string) T {
	t.Helper()
	return decodeStatus[T](t, Run(t, bin, statusArgs(addrs)...))
}

func statusArgs(addrs string) []string {
	return []string{"cluster", "status", "--output", "json", "--addr", addrs}
}

func decodeStatus[T any](t testing.TB, r Result) T {
	t.Helper()
	var cs T
	if err := json.Unmarshal([]byte(r.Stdout), &cs); err != nil {
		t.Fatalf("cluster status json: %v: %v", err, r)
	}
	return cs
}

// statusOutput holds what the harness reads of `cluster status --output json`, decoded by
// the documented names (docs/operations.md).
type statusOutput struct {
	Leader string `json:"leader"`
	Nodes  []struct {
		client.Status
		Hashes []string `json:"hashes"`
		Error  string   `json:"error,omitempty"`
	} `json:"nodes"`
}

// LeaderNode returns the node process of c that leads, as `cluster status` says.
func LeaderNode(t testing.TB, bin string, c *Cluster) *Node {
	t.Helper()
	id := StatusAnyHealth[statusOutput](t, bin, c.AddrFlag()).Leader
	for _, n := range c.Procs {
		if n.ID == id {
			return n
		}
	}
	t.Fatalf("no leader among the nodes (leader %q)", id)
	return nil
}

// WaitConvergedVoters waits until the nodes answering at addrs are exactly ids (sorted),
// every one a ready voter, all at the same applied index with equal state hashes.
func WaitConvergedVoters(t testing.TB, bin string, addrs string, ids []string) {
	t.Helper()
	testutil.WaitFor(t, 90*time.Second, func() error {
		cs := StatusAnyHealth[statusOutput](t, bin, addrs)
		var hashes [][]string
		var applied []uint64
		var got []string
		for _, n := range cs.Nodes {
			if n.Error != "" {
				continue
			}
			if n.Suffrage != "voter" || !n.Ready {
				return fmt.Errorf("%s: suffrage %q ready %t (%s)", n.NodeID, n.Suffrage, n.Ready, n.NotReadyReason)
			}
			got = append(got, n.NodeID)
			hashes = append(hashes, n.Hashes)
			applied = append(applied, n.AppliedIndex)
		}
		slices.Sort(got)
		if !slices.Equal(got, ids) {
			return fmt.Errorf("voters answering %v, want %v", got, ids)
		}
		for i := range hashes {
			if applied[i] != applied[0] || !slices.Equal(hashes[i], hashes[0]) {
				return fmt.Errorf("replicas differ: applied %v", applied)
			}
		}
		return nil
	})
}
