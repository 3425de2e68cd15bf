package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
)

// TestClusterStatusExitCodes runs `cluster status` against three real node processes as
// they fail: it exits 0 while the cluster is healthy, exitUnreachable once a member is
// killed, and exitNoLeader once a second one is, saying what is wrong on stderr after it
// printed the table.
func TestClusterStatusExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := buildBinary(t)
	c := startCluster(t, bin, 3)
	addrs := c.addrs()

	r := run(t, bin, "cluster", "status", "--addr", addrs)
	if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "READY") {
		t.Fatalf("healthy cluster: %v, want exit 0, the table and nothing on stderr", r)
	}

	leader := clusterStatus(t, bin, addrs).Leader
	var followers []*procNode
	for _, n := range c.nodes {
		if n.id != leader {
			followers = append(followers, n)
		}
	}
	followers[0].Kill()
	r = run(t, bin, "cluster", "status", "--addr", addrs)
	checkExit(t, r, exitUnreachable, "1 of 3 nodes did not answer")
	if !strings.Contains(r.stdout, "unreachable") || !strings.Contains(r.stdout, followers[0].client) {
		t.Fatalf("with %s down, the table does not show it: %v", followers[0].id, r)
	}

	// Without a majority the survivors lose the leader (the leader's lease ends, the
	// follower's heartbeat timeout passes): from then on the command says so.
	followers[1].Kill()
	testutil.WaitFor(t, 20*time.Second, func() error {
		r = run(t, bin, "cluster", "status", "--addr", addrs)
		if r.code != exitNoLeader {
			return fmt.Errorf("exit %d, want %d (no leader): %s", r.code, exitNoLeader, r.stderr)
		}
		return nil
	})
	checkExit(t, r, exitNoLeader, "no leader")
	for _, want := range []string{"2 of 3 nodes did not answer", leader + ": no leader known"} {
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("stderr does not say %q: %v", want, r)
		}
	}
	if !strings.Contains(r.stdout, leader) {
		t.Fatalf("the table does not show the survivor %s: %v", leader, r)
	}
}

// checkExit checks that r failed with exit code want and one stderr line, "lockstep: ..."
// containing text.
func checkExit(t *testing.T, r result, want int, text string) {
	t.Helper()
	checkFailure(t, r, text)
	if r.code != want {
		t.Fatalf("exit %d, want %d: %v", r.code, want, r)
	}
}
