//go:build !jepsen_lostwrite

package planted

// LostWrite is false: the planted bug that acknowledges every tenth kv.put and counter.add without the log is built only with -tags jepsen_lostwrite.
const LostWrite = false
