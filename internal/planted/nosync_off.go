//go:build !jepsen_nosync

package planted

// NoSync is false: the planted bug that fsyncs the crash-model log store only periodically is built only with -tags jepsen_nosync.
const NoSync = false
