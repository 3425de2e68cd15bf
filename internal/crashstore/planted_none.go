//go:build !jepsen_nosync

package crashstore

import "time"

// plantedNoSync is the fault switch of the jepsen_nosync build (planted_nosync.go); false
// in every other build.
const plantedNoSync = false

// plantedSyncEvery is unused outside the jepsen_nosync build.
const plantedSyncEvery = time.Duration(0)
