package jepsen

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockstepdb/lockstep/client"
)

// WaitConverged waits until every node of c answers its status at the same applied index
// with the same state hashes (DESIGN.md invariant 1), and returns the last difference if
// timeout passes first.
func WaitConverged(ctx context.Context, cl *client.Client, c *Cluster, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := converged(ctx, cl, c)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replicas not identical after %v: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func converged(ctx context.Context, cl *client.Client, c *Cluster) error {
	var first *client.Status
	for _, n := range c.Nodes {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := cl.Status(sctx, n.Client)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", n.ID, err)
		}
		if st.Divergent != "" {
			return fmt.Errorf("%s divergent: %s", n.ID, st.Divergent)
		}
		if first == nil {
			first = &st
			continue
		}
		if st.AppliedIndex != first.AppliedIndex {
			return fmt.Errorf("%s applied %d, %s applied %d", first.NodeID, first.AppliedIndex, n.ID, st.AppliedIndex)
		}
		if !slices.Equal(st.Hashes, first.Hashes) {
			return fmt.Errorf("%s and %s differ at applied index %d: hashes %x and %x", first.NodeID, n.ID, st.AppliedIndex, first.Hashes, st.Hashes)
		}
	}
	return nil
}
