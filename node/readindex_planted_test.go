//go:build jepsen_staleread

package node

import "testing"

// TestReadIndexPlantedStaleRead runs TestReadIndexDeposedLeader's scenario on the build
// whose read-index round skips the quorum confirmation (planted.StaleRead, node/planted.go): the stale
// read must be caught.
func TestReadIndexPlantedStaleRead(t *testing.T) {
	if err := deposedLeaderReads(t, false); err == nil {
		t.Fatal("the planted stale read went unnoticed")
	} else {
		t.Logf("caught: %v", err)
	}
}
