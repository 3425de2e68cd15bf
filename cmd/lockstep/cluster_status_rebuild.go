package main

import (
	"fmt"
	"io"

	"github.com/lockstepdb/lockstep/node"
)

// rebuildRole is the ROLE column of a node in the middle of its automatic rebuild after
// a divergence ("rebuilding"), else role.
func rebuildRole(r nodeRow, role string) string {
	if r.Rebuild == node.RebuildRebuilding {
		return "rebuilding"
	}
	return role
}

// writeRebuildNotes prints one line per node with a rebuild under way, refused or ruled
// out ("rebuild n3: fenced: diverged again after 1 automatic rebuild(s) ..."), and the
// automatic rebuilds each node went through.
func writeRebuildNotes(w io.Writer, rows []nodeRow) {
	for _, r := range rows {
		if r.Rebuild != "" {
			fmt.Fprintf(w, "rebuild %s: %s: %s\n", r.NodeID, r.Rebuild, r.RebuildNote)
		} else if r.Rebuilds > 0 {
			fmt.Fprintf(w, "rebuild %s: %d automatic rebuild(s), the last from index %d\n", r.NodeID, r.Rebuilds, r.RebuildFrom)
		}
	}
}
