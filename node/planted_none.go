//go:build !jepsen_lostwrite

package node

// plantedLostWrite is the fault switch of the jepsen_lostwrite build (planted_lostwrite.go);
// in every other build it never fires.
func plantedLostWrite(string) []byte { return nil }
