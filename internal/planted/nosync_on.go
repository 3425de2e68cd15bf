//go:build jepsen_nosync

package planted

// NoSync is a planted bug, for the fault-injection harness's tests only (jepsen/):
// built with -tags jepsen_nosync, StoreLogs fsyncs only when the last fsync is
// crashstore.plantedSyncEvery old and otherwise returns before its entries are durable (a periodic
// fsync that acknowledges in between), so Raft acknowledges entries a power loss takes
// away; FS.Sync likewise makes raft-wal's writes durable only that often. The set
// workload under kill-all on either must catch it (jepsen.TestCheckersCatchUnsyncedLog).
const NoSync = true
