package runner

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures"
)

// rebuildBindWait is how long a rebuilt node waits for its ports to be free again.
const rebuildBindWait = 10 * time.Second

// rebuildNode does what Run owes a node that announced its automatic rebuild
// (node.Node.RebuildRequested; docs/operations.md, "Automatic rebuild of a divergent
// replica"): it closes the node, prepares its data directory (its Raft state discarded, a
// new incarnation) and starts it again on the same addresses, to join the cluster and
// install a healthy replica's snapshot. *cfg becomes the new node's Config.
func rebuildNode(n *node.Node, cfg *node.Config, reg *procedures.Registry) (*node.Node, error) {
	plan := n.RebuildPlan()
	cfg.Logger.Warn("rebuilding this node: closing it, discarding its state, starting it again", "from", plan.From,
		"reason", plan.Reason)
	if err := n.Close(); err != nil {
		cfg.Logger.Warn("close before the rebuild", "err", err)
	}
	next, err := node.PrepareRebuild(*cfg, plan)
	if err != nil {
		return nil, fmt.Errorf("rebuild: %w", err)
	}
	*cfg = next
	deadline := time.Now().Add(rebuildBindWait)
	for {
		n, err = node.Start(next, reg)
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			return nil, fmt.Errorf("rebuild: start again: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
