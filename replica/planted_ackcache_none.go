//go:build !jepsen_ackcache

package replica

// plantedCacheAcked is the fault switch of the jepsen_ackcache build
// (planted_ackcache.go); false in every other build.
const plantedCacheAcked = false
