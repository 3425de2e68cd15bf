package crashstore

import "time"

// plantedSyncEvery is the fsync period of the jepsen_nosync build's planted bug
// (planted.NoSync): StoreLogs fsyncs only when the last fsync is this old and otherwise
// returns before its entries are durable (a periodic fsync that acknowledges in between),
// so Raft acknowledges entries a power loss takes away; FS.Sync likewise makes raft-wal's
// writes durable only that often. The set workload under kill-all on either must catch it
// (jepsen.TestCheckersCatchUnsyncedLog).
const plantedSyncEvery = 500 * time.Millisecond
