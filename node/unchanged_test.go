package node

import (
	"context"
	"fmt"

	"github.com/lockstepdb/lockstep/client"
)

// unchanged is what a refused command must leave as it was (DESIGN.md invariant 7: bad
// input changes nothing): the deployment, and the state hashes of the converged cluster.
type unchanged struct {
	c      *testCluster
	cl     *client.Client
	dep    client.Deployment
	hashes []uint64
}

// recordUnchanged waits for the cluster to converge and records its deployment (read
// through cl) and state hashes.
func (c *testCluster) recordUnchanged(ctx context.Context, cl *client.Client) unchanged {
	c.t.Helper()
	u := unchanged{c: c, cl: cl, hashes: c.waitConverged()}
	var err error
	if u.dep, err = cl.Procedures().Deployment(ctx); err != nil {
		c.t.Fatal(err)
	}
	return u
}

// check reports a deployment or state hashes that differ from the recorded ones.
func (u unchanged) check(ctx context.Context) {
	u.c.t.Helper()
	after, err := u.cl.Procedures().Deployment(ctx)
	if err != nil || fmt.Sprint(after) != fmt.Sprint(u.dep) {
		u.c.t.Errorf("deployment after the refusals: %+v %v, want %+v", after, err, u.dep)
	}
	if got := u.c.waitConverged(); fmt.Sprint(got) != fmt.Sprint(u.hashes) {
		u.c.t.Errorf("hashes after the refusals %x, want %x", got, u.hashes)
	}
}
