//go:build !lockstep_upgrade_old

package main

import "github.com/lockstepdb/lockstep/procedures"

// Build B, the new build, the default one.

// build names the build in the binary's usage.
const build = "B (new)"

// maxClusterVersion is the newest cluster version the build runs: 0, this Lockstep's own.
const maxClusterVersion = 0

// newBuild registers what build B adds: score.add@2, the changed rule. It runs only once
// "lockstep deploy activate score.add@2" switches every replica to it at one log index;
// until then, and when replaying the entries before that index, score.add@1 runs.
func newBuild(r *procedures.Registry) {
	procedures.MustRegister(r, "score.add@2", scoreAdd(2),
		procedures.Doc("key: player; adds 10 points to the player's score; returns the code's version and the score"))
}
