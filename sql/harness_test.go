package sql_test

import (
	"testing"

	"github.com/lockstepdb/lockstep/internal/testutil/sqltest"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sql"
)

// harness runs a compiled SQL deployment on a replica FSM in process (sqltest.Harness):
// entries of stream.append items are encoded into a Raft log and applied, in ApplyBatch
// groups the test chooses. This package's tests add their checks as its methods.
type harness struct{ *sqltest.Harness }

func newHarness(t testing.TB, parts int, script string) *harness {
	t.Helper()
	return &harness{sqltest.New(t, parts, script)}
}

func newHarnessFor(t testing.TB, parts int, art *sql.Artifact) *harness {
	t.Helper()
	return newHarnessWith(t, replica.Config{Partitions: parts}, art)
}

func newHarnessWith(t testing.TB, cfg replica.Config, art *sql.Artifact) *harness {
	t.Helper()
	return &harness{sqltest.NewFor(t, cfg, art)}
}

type (
	partitionTx     = partition.Tx
	partitionRecord = partition.Record
)
