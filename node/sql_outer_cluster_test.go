package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/partition"
)

// TestSQLOuterJoinCluster (issue 23): a FULL OUTER join of two streams on a 3-node
// cluster: pairs appear as both rows arrive, a row with no partner within the bound
// appears once, NULL-padded, after the watermark passes its bound, the join keeps no
// row after that, and the replicas converge to equal hashes.
func TestSQLOuterJoinCluster(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3, patientRaft: true})
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	ts := func(ms int64) string { return time.UnixMilli(sqlBase + ms).UTC().Format("2006-01-02 15:04:05.000") }
	for _, s := range []string{
		`CREATE STREAM a (id text, g bigint, ts timestamp) WITH (key = 'id', event_time = 'ts', idle_timeout = '1 second')`,
		`CREATE STREAM b (id text, g bigint, ts timestamp) WITH (key = 'id', event_time = 'ts', idle_timeout = '1 second')`,
		`CREATE MATERIALIZED VIEW fo AS SELECT a.id AS aid, b.id AS bid FROM a FULL OUTER JOIN b
		  ON a.g = b.g AND b.ts BETWEEN a.ts AND a.ts + INTERVAL '1 second'`,
		fmt.Sprintf(`INSERT INTO a VALUES ('a1', 1, '%s'), ('a2', 2, '%s'), ('a3', NULL, '%s')`, ts(0), ts(100), ts(200)),
		fmt.Sprintf(`INSERT INTO b VALUES ('b1', 1, '%s'), ('b2', 2, '%s'), ('b3', 3, '%s')`, ts(500), ts(5000), ts(300)),
		// A row far ahead moves the watermark past b2's bound; its NULL join value pairs
		// with nothing, so it is published padded at once.
		fmt.Sprintf(`INSERT INTO a VALUES ('z', NULL, '%s')`, ts(60_000)),
	} {
		if _, err := cl.SQL().Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	waitSQLRows(t, ctx, cl, "SELECT aid, bid FROM fo", "<nil> b2", "<nil> b3", "a1 b1", "a2 <nil>", "a3 <nil>", "z <nil>")
	c.waitConverged() // every replica has applied what the leader has
	for _, n := range c.Nodes {
		if n == nil {
			continue
		}
		for _, tbl := range []string{"fo.pairs", "fo.rpairs", "fo.unmatched", "fo.expiry"} {
			kept := 0
			for _, p := range n.fsm.Engine().Partitions() {
				p.Scan(tbl, partition.ScanOptions{}, func(_, _ []byte) bool { kept++; return true })
			}
			if kept != 0 {
				t.Errorf("%s keeps %d rows after the last bound passed", tbl, kept)
			}
		}
	}
}
