//go:build lockstep_upgrade_next && !lockstep_upgrade_old

package main

import (
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
)

// Build C, the next build (tag lockstep_upgrade_next): build B and a new processor with its
// read procedure.

// build names the build in the binary's usage.
const build = "C (next)"

// maxClusterVersion is the newest cluster version the build runs: 0, this Lockstep's own.
const maxClusterVersion = 0

// PlaysTable holds plays.count's counts: the number of records of stream "plays" per key.
const PlaysTable = "plays"

// newBuild registers what build C adds to build B: the processor plays.count@1 over the
// stream "plays" and the read-only procedure plays.get@1 that reads its counts. Neither
// runs until "lockstep deploy activate processor:plays.count@1 plays.get@1" adds them at
// one log index (cluster version 3: the engine runs only the active processors, so a
// binary may carry one the cluster does not run); plays.count then starts at the stream's
// first offset, so it counts the records appended before its activation too.
func newBuild(r *procedures.Registry) {
	registerScoreV2(r)
	procedures.MustRegisterProcessor(r, "plays.count", "plays", countPlay,
		procedures.ProcessorDoc("counts the records of stream plays per key into table plays"))
	procedures.MustRegister(r, "plays.get", getPlays, procedures.ReadOnly(),
		procedures.Doc("key: player; returns how many records of stream plays plays.count has counted for the player"))
}

// countPlay is plays.count: one more record of the key.
func countPlay(tx *partition.Tx, rec partition.Record) error {
	n := readCount(tx, rec.Key)
	return tx.Put(PlaysTable, rec.Key, []byte(fmt.Sprint(n+1)))
}

// PlaysArgs are the arguments of plays.get: none, the key is the player.
type PlaysArgs struct{}

// getPlays is plays.get: the key's count, 0 before its first record.
func getPlays(tx *partition.Tx, _ PlaysArgs) (int64, error) { return readCount(tx, tx.Key()), nil }

// readCount returns the count table plays holds for key, 0 if none.
func readCount(tx *partition.Tx, key []byte) int64 {
	var n int64
	if b, ok := tx.Get(PlaysTable, key); ok {
		fmt.Sscan(string(b), &n)
	}
	return n
}
