package jepsen

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockstepdb/lockstep/client"
)

// WaitConverged waits until every node of c answers its status at the same applied index
// with the same state hashes, none has marked itself divergent, and every hash check two
// nodes both hold has the same partition hashes and the same meta hash (the session table
// with its cached results, cluster and node info) on both (DESIGN.md invariant 1). It
// returns the last difference if timeout passes first.
func WaitConverged(ctx context.Context, cl *client.Client, c *Cluster, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := converged(ctx, cl, c)
		if err == nil {
			return nil
		}
		if down := notRunning(c); down != "" {
			// Waiting cannot help: Run's heal restarted every node, so one that is down
			// now exited by itself (no-unexpected-exit says why).
			return fmt.Errorf("replicas not identical: %s is not running: %w", down, err)
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

// notRunning returns the id of the first node of c whose process is not running, or "".
func notRunning(c *Cluster) string {
	for _, n := range c.Nodes {
		if !n.Running() {
			return n.ID
		}
	}
	return ""
}

func converged(ctx context.Context, cl *client.Client, c *Cluster) error {
	var first *client.Status
	checks := map[uint64]hashCheckOf{} // by log index: the first node's record there
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
		if err := sameHashChecks(checks, st); err != nil {
			return err
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

// hashCheckOf is a node's hash-check record and the node it came from.
type hashCheckOf struct {
	node string
	rec  client.HashCheck
}

// sameHashChecks compares st's hash-check records with the ones seen (by log index) and
// adds its own: a record at an index another node also holds must carry the same partition
// hashes and, where both report one, the same meta hash. Records are immutable once
// made, so a difference is a divergence, not a node that has not caught up.
func sameHashChecks(seen map[uint64]hashCheckOf, st client.Status) error {
	for _, h := range st.HashChecks {
		o, ok := seen[h.Index]
		if !ok {
			seen[h.Index] = hashCheckOf{node: st.NodeID, rec: h}
			continue
		}
		if !slices.Equal(o.rec.Hashes, h.Hashes) {
			return fmt.Errorf("%s and %s differ at hash check %d: partition hashes %x and %x", o.node, st.NodeID, h.Index, o.rec.Hashes, h.Hashes)
		}
		if o.rec.Meta != 0 && h.Meta != 0 && o.rec.Meta != h.Meta {
			return fmt.Errorf("%s and %s differ at hash check %d: meta hash (session table, cluster and node info) %016x and %016x",
				o.node, st.NodeID, h.Index, o.rec.Meta, h.Meta)
		}
	}
	return nil
}
