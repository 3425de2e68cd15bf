package replica

import (
	"slices"
	"testing"

	"github.com/lockstepdb/lockstep/sql"
)

// TestSQLDropRightPairsFromVersion7: removing a "sql" module deletes a view's n.rpairs
// (table and stream) only from VersionSQLPlan6 on. A binary of an older cluster version
// derives no such name, so below it a node must leave a stream or table of that name
// alone, as those binaries do.
func TestSQLDropRightPairsFromVersion7(t *testing.T) {
	art, err := sql.Compile(`CREATE STREAM clicks (usr text, page text, ts timestamp) WITH (key = 'usr', event_time = 'ts');
CREATE MATERIALIZED VIEW pages AS SELECT usr, page FROM clicks;`, sql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		version uint64
		want    bool
	}{{VersionSQLPlan6 - 1, false}, {VersionSQLPlan6, true}} {
		d, err := sqlDropOf(art.Plan, tc.version)
		if err != nil {
			t.Fatal(err)
		}
		inTables, inStreams := slices.Contains(d.tables, "pages.rpairs"), slices.Contains(d.streams, "pages.rpairs")
		if inTables != tc.want || inStreams != tc.want {
			t.Errorf("version %d: pages.rpairs deleted as a table %v, as a stream %v; want %v", tc.version, inTables, inStreams, tc.want)
		}
		if !slices.Contains(d.tables, "pages.pairs") {
			t.Errorf("version %d: pages.pairs not deleted", tc.version)
		}
	}
}
