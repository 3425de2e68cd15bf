//go:build !jepsen_staleread

package planted

// StaleRead is false: the planted bug that answers linearizable reads without a quorum round is built only with -tags jepsen_staleread.
const StaleRead = false
