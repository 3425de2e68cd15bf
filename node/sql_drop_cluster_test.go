package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
)

// sqlRows returns the rows of query q, each as its values joined by spaces, sorted.
func sqlRows(ctx context.Context, cl *client.Client, q string) ([]string, error) {
	rows, err := cl.SQL().Query(ctx, q)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, r := range rows.Rows {
		var f []string
		for _, v := range r {
			f = append(f, fmt.Sprint(v))
		}
		out = append(out, strings.Join(f, " "))
	}
	slices.Sort(out)
	return out, nil
}

func waitSQLRows(t *testing.T, ctx context.Context, cl *client.Client, q string, want ...string) {
	t.Helper()
	testutil.WaitFor(t, 60*time.Second, func() error {
		got, err := sqlRows(ctx, cl, q)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("%s: got %q, want %q", q, got, want)
		}
		return nil
	})
}

// streamLen counts the records of stream on n, over every partition (-1: no such stream).
func streamLen(t *testing.T, n *Node, stream string) int {
	total := 0
	for _, p := range n.fsm.Engine().Partitions() {
		if _, ok := p.StreamInfo(stream); !ok {
			return -1
		}
		recs, _, err := p.ReadStream(stream, 0, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		total += len(recs)
	}
	return total
}

// TestSQLDropFreesNames (issue 23): DROP STREAM, DROP TABLE and DROP MATERIALIZED VIEW
// free their names on a 3-node cluster. A view dropped and created again under its name
// with another definition computes its new definition over its input from the start,
// with none of the old rows; a table created again with another schema starts empty; a
// stream dropped with its view and created again starts empty; a view over a dropped
// stream is refused at its place; a drop under a view that reads it is refused naming
// the view; and the replicas converge to equal hashes.
func TestSQLDropFreesNames(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3, patientRaft: true})
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	exec := func(s string) {
		t.Helper()
		if _, err := cl.SQL().Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	exec(`CREATE STREAM s (k text, v bigint) WITH (key = 'k')`)
	exec(`CREATE TABLE t (id text, n bigint) WITH (key = 'id')`)
	exec(`CREATE MATERIALIZED VIEW v AS SELECT k, v FROM s`)
	exec(`CREATE MATERIALIZED VIEW g AS SELECT k, count(*) AS c FROM s GROUP BY k`)
	exec(`INSERT INTO s VALUES ('a', 1), ('b', 2), ('b', 3)`)
	exec(`INSERT INTO t VALUES ('x', 1)`)
	waitSQLRows(t, ctx, cl, "SELECT k, v FROM v", "a 1", "b 2", "b 3")
	waitSQLRows(t, ctx, cl, "SELECT k, c FROM g", "a 1", "b 2")
	waitSQLRows(t, ctx, cl, "SELECT id, n FROM t", "x 1")

	// Something reads s: refused, naming the view.
	if _, err := cl.SQL().Exec(ctx, "DROP STREAM s"); !errors.Is(err, client.ErrBadArguments) || !strings.Contains(err.Error(), "view") {
		t.Fatalf("DROP STREAM s under views: got %v", err)
	}

	// A view created again under its name starts from its new definition.
	exec(`DROP MATERIALIZED VIEW v`)
	exec(`CREATE MATERIALIZED VIEW v AS SELECT k, v * 10 AS w FROM s WHERE v > 1`)
	waitSQLRows(t, ctx, cl, "SELECT k, w FROM v", "b 20", "b 30")
	exec(`DROP MATERIALIZED VIEW g`)
	exec(`CREATE MATERIALIZED VIEW g AS SELECT k, sum(v) AS total FROM s GROUP BY k`)
	waitSQLRows(t, ctx, cl, "SELECT k, total FROM g", "a 1", "b 5")

	// A table created again with another schema starts empty.
	exec(`DROP TABLE t`)
	exec(`CREATE TABLE t (id text, name text, score double precision) WITH (key = 'id')`)
	if got, err := sqlRows(ctx, cl, "SELECT id FROM t"); err != nil || len(got) != 0 {
		t.Fatalf("recreated table t: %q %v, want no rows", got, err)
	}
	exec(`INSERT INTO t VALUES ('y', 'why', 1.5)`)
	waitSQLRows(t, ctx, cl, "SELECT id, name, score FROM t", "y why 1.5")

	// A stream dropped with its views; a view over it is refused at its place.
	exec(`DROP MATERIALIZED VIEW v, g`)
	exec(`DROP STREAM s`)
	_, err := cl.SQL().Exec(ctx, "CREATE MATERIALIZED VIEW w AS\n  SELECT k FROM s")
	var se *client.SQLError
	if !errors.As(err, &se) || se.Line != 2 || !strings.Contains(err.Error(), "s") {
		t.Fatalf("a view over a dropped stream: got %v (%+v), want an SQLError at line 2", err, se)
	}
	if rows, err := sqlRows(ctx, cl, "SHOW VIEWS"); err != nil || len(rows) != 0 {
		t.Fatalf("SHOW VIEWS after the refused view: %q %v", rows, err)
	}
	// Created again with another schema, it starts empty, and so do its views.
	exec(`CREATE STREAM s (k text, x double precision, note text) WITH (key = 'k')`)
	n := c.waitLeader()
	if got := streamLen(t, n, "s"); got != 0 {
		t.Fatalf("recreated stream s holds %d records, want 0", got)
	}
	exec(`CREATE MATERIALIZED VIEW v AS SELECT k, x, note FROM s`)
	exec(`INSERT INTO s VALUES ('c', 2.5, 'new')`)
	waitSQLRows(t, ctx, cl, "SELECT k, x, note FROM v", "c 2.5 new")
	if got := streamLen(t, n, "s"); got != 1 {
		t.Fatalf("recreated stream s holds %d records, want 1", got)
	}
	// Dropped together in one DROP (the view first, whatever the order named).
	exec(`DROP STREAM s, v`)
	if got := streamLen(t, n, "s"); got != -1 {
		t.Fatalf("stream s after DROP STREAM s, v: %d records, want no stream", got)
	}
	c.waitConverged()
}

// TestSQLDropTogether (issue 23): the modules of one DROP are removed in one log entry
// (their removals carry one index), so a DROP retried after an unknown outcome finds
// either all of them removed or none; DROP IF EXISTS skips names not deployed and
// succeeds on absent names alone; a retried DROP without it is refused as a whole,
// changing nothing.
func TestSQLDropTogether(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3, patientRaft: true})
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	exec := func(s string) client.ExecResult {
		t.Helper()
		res, err := cl.SQL().Exec(ctx, s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return res
	}
	exec(`CREATE STREAM s (k text, v bigint) WITH (key = 'k')`)
	exec(`CREATE MATERIALIZED VIEW v1 AS SELECT k FROM s`)
	exec(`CREATE MATERIALIZED VIEW v2 AS SELECT k, count(*) AS c FROM s GROUP BY k`)
	exec(`CREATE STREAM other (k text) WITH (key = 'k')`)
	exec(`INSERT INTO s VALUES ('a', 1)`)
	waitSQLRows(t, ctx, cl, "SELECT k, c FROM v2", "a 1")

	if res := exec(`DROP MATERIALIZED VIEW v1, v2, s`); len(res.Dropped) != 3 {
		t.Fatalf("dropped %q, want 3 modules", res.Dropped)
	}
	ms, err := cl.Procedures().Modules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]uint64{}
	for _, m := range ms {
		if h := m.History[len(m.History)-1]; h.Removed {
			at[m.Name] = h.Index
		}
	}
	if len(at) != 3 || at["v1"] != at["v2"] || at["v2"] != at["s"] {
		t.Fatalf("removals at %v, want v1, v2 and s removed at one index", at)
	}
	// The retry of a DROP that went through: refused as a whole, nothing changes.
	if _, err := cl.SQL().Exec(ctx, `DROP MATERIALIZED VIEW v1, v2, s`); !errors.Is(err, client.ErrBadArguments) {
		t.Fatalf("retried DROP: got %v", err)
	}
	if res := exec(`DROP MATERIALIZED VIEW IF EXISTS v1, v2, s`); len(res.Dropped) != 0 {
		t.Fatalf("DROP IF EXISTS of dropped names dropped %q", res.Dropped)
	}
	if res := exec(`DROP STREAM IF EXISTS nosuch, other`); !slices.Equal(res.Dropped, []string{"other"}) {
		t.Fatalf("DROP IF EXISTS nosuch, other dropped %q", res.Dropped)
	}
	if rows, err := sqlRows(ctx, cl, "SHOW STREAMS"); err != nil || len(rows) != 0 {
		t.Fatalf("SHOW STREAMS: %q %v", rows, err)
	}
	c.waitConverged()
}
