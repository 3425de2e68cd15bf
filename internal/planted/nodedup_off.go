//go:build !jepsen_nodedup

package planted

// NoDedup is false: the planted bug that runs a retried request again is built only with -tags jepsen_nodedup.
const NoDedup = false
