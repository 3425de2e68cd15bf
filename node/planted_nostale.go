//go:build !jepsen_staleread

package node

// plantedNoteLeading and plantedStaleRead are the fault switch of the jepsen_staleread
// build (planted_staleread.go); in every other build they do nothing.
func plantedNoteLeading(*Node, uint64) {}

func plantedStaleRead(*Node) bool { return false }
