package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
)

// TestClusterStatusExitCodes runs `cluster status` against three real node processes as
// they fail: it exits 0 while the cluster is healthy, exitUnreachable once a member is
// killed, and exitNoLeader once a second one is, saying what is wrong on stderr after it
// printed the table.
func TestClusterStatusExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 3)
	addrs := c.AddrFlag()

	r := proctest.Run(t, bin, "cluster", "status", "--addr", addrs)
	if r.Code != 0 || r.Stderr != "" || !strings.Contains(r.Stdout, "READY") {
		t.Fatalf("healthy cluster: %v, want exit 0, the table and nothing on stderr", r)
	}

	leader := clusterStatus(t, bin, addrs).Leader
	var followers []*proctest.Node
	for _, n := range c.Procs {
		if n.ID != leader {
			followers = append(followers, n)
		}
	}
	followers[0].Kill()
	r = proctest.Run(t, bin, "cluster", "status", "--addr", addrs)
	checkExit(t, r, exitUnreachable, "1 of 3 nodes did not answer")
	if !strings.Contains(r.Stdout, "unreachable") || !strings.Contains(r.Stdout, followers[0].Client) {
		t.Fatalf("with %s down, the table does not show it: %v", followers[0].ID, r)
	}

	// Without a majority the survivors lose the leader (the leader's lease ends, the
	// follower's heartbeat timeout passes): from then on the command says so.
	followers[1].Kill()
	testutil.WaitFor(t, 20*time.Second, func() error {
		r = proctest.Run(t, bin, "cluster", "status", "--addr", addrs)
		if r.Code != exitNoLeader {
			return fmt.Errorf("exit %d, want %d (no leader): %s", r.Code, exitNoLeader, r.Stderr)
		}
		return nil
	})
	checkExit(t, r, exitNoLeader, "no leader")
	for _, want := range []string{"2 of 3 nodes did not answer", leader + ": no leader known"} {
		if !strings.Contains(r.Stderr, want) {
			t.Fatalf("stderr does not say %q: %v", want, r)
		}
	}
	if !strings.Contains(r.Stdout, leader) {
		t.Fatalf("the table does not show the survivor %s: %v", leader, r)
	}
}

// checkExit checks that r failed with exit code want and one stderr line, "lockstep: ..."
// containing text.
func checkExit(t *testing.T, r proctest.Result, want int, text string) {
	t.Helper()
	proctest.CheckFailure(t, r, text)
	if r.Code != want {
		t.Fatalf("exit %d, want %d: %v", r.Code, want, r)
	}
}
