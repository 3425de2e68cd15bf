//go:build !lockstep_upgrade_old && !lockstep_upgrade_next

package main

import "github.com/lockstepdb/lockstep/procedures"

// Build B, the new build, the default one.

// build names the build in the binary's usage.
const build = "B (new)"

// maxClusterVersion is the newest cluster version the build runs: 0, this Lockstep's own.
const maxClusterVersion = 0

// newBuild registers what build B adds: score.add@2, the changed rule (registerScoreV2).
func newBuild(r *procedures.Registry) { registerScoreV2(r) }
