//go:build !jepsen_nodedup

package replica

// plantedNoDedup is the fault switch of the jepsen_nodedup build (planted_nodedup.go);
// false in every other build.
const plantedNoDedup = false
