//go:build !lockstep_upgrade_old

package main

import "github.com/lockstepdb/lockstep/procedures"

// registerScoreV2 registers score.add@2, the changed rule, which builds B and C carry. It
// runs only once "lockstep deploy activate score.add@2" switches every replica to it at
// one log index (or in a cluster a build carrying it bootstrapped: a new cluster starts
// with the newest version of each procedure); until then, and when replaying the entries
// before that index, score.add@1 runs.
func registerScoreV2(r *procedures.Registry) {
	procedures.MustRegister(r, "score.add@2", scoreAdd(2),
		procedures.Doc("key: player; adds 10 points to the player's score; returns the code's version and the score"))
}
