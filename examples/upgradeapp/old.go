//go:build lockstep_upgrade_old

package main

import (
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures"
)

// Build A, the old build: it runs as a binary of the previous release would.

// build names the build in the binary's usage.
const build = "A (old)"

// maxClusterVersion is the newest cluster version the build runs: one below this
// Lockstep's, so a cluster of it must be upgraded once every node runs build B.
const maxClusterVersion = node.MaxClusterVersion - 1

// newBuild registers what build A has beyond score.add@1: nothing.
func newBuild(*procedures.Registry) {}
