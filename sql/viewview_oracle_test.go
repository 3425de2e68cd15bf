package sql_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/testutil/pgtest"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// TestViewsOverViewsMatchPostgres: views over views (plan version 3) over random rows,
// out-of-orderness, window sizes, allowed lateness, entry boundaries and apply
// groupings, against PostgreSQL (DESIGN.md section 11's rule): an aggregate over a
// TUMBLE view's final rows grouped by their event time (closing), one not grouped by it
// (running), a projection of them, a join of the stream with them, and an aggregate
// over a running aggregate's changing rows (retractions, groups that empty). After the
// last watermark each equals the batch query over the input less the late rows of the
// view that judged them, over the windows the watermark closed; no view over a view
// has a late row.
func TestViewsOverViewsMatchPostgres(t *testing.T) {
	db := pgtest.New(t)
	conn := db.Connect(t)
	late := 0
	for seed := range 8 {
		r := rand.New(rand.NewPCG(uint64(seed), 41))
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { late += runViewViewCase(t, conn, r) })
	}
	if late == 0 {
		t.Errorf("no row was late in any case: lateness is untested")
	}
}

func runViewViewCase(t *testing.T, conn *pgx.Conn, r *rand.Rand) int {
	size := int64(500 * (1 + r.IntN(4)))
	lateness := int64(r.IntN(3)) * 300
	ooo := r.IntN(3) * 300
	script := fmt.Sprintf(`
CREATE STREAM ev (k text, g bigint, v bigint, ts timestamp) WITH (key = 'k', event_time = 'ts', out_of_orderness = '%[1]d milliseconds', idle_timeout = '2 seconds');
CREATE MATERIALIZED VIEW tw WITH (allowed_lateness = '%[3]d milliseconds') AS
  SELECT g, count(*) AS c, sum(v) AS s, max(v) AS mx, window_end AS we
  FROM TUMBLE(ev, ts, INTERVAL '%[2]d milliseconds') GROUP BY window_start, window_end, g EMIT ON WINDOW CLOSE;
CREATE MATERIALIZED VIEW vt AS SELECT we, max(c) AS mc, sum(s) AS ss, count(*) AS n FROM tw GROUP BY we;
CREATE MATERIALIZED VIEW vr AS SELECT t.g, count(*) AS n, sum(t.c) AS sc, min(t.mx) AS mm FROM tw t WHERE t.c > 1 GROUP BY t.g;
CREATE MATERIALIZED VIEW vp AS SELECT g, c * 2 AS c2, we FROM tw WHERE s IS NOT NULL;
CREATE MATERIALIZED VIEW vj AS SELECT e.k, e.v, t.c FROM ev e JOIN tw t
  ON e.g = t.g AND e.ts >= t.we - INTERVAL '%[2]d milliseconds' AND e.ts < t.we WHERE e.v >= t.mx - 2;
CREATE MATERIALIZED VIEW agg AS SELECT g, count(*) AS c, sum(v) AS s FROM ev WHERE v <> 0 GROUP BY g;
CREATE MATERIALIZED VIEW va AS SELECT c %% 3 AS cm, count(*) AS n, sum(s) AS ss, avg(s) AS a FROM agg WHERE g <> 1 GROUP BY c %% 3;
`, ooo, size, lateness)
	h := newHarness(t, 1+r.IntN(4), script)
	if h.Art.Plan.Version != plan.Version { // 3 for the constructs, 6 for the side tables
		t.Fatalf("plan version %d, want %d", h.Art.Plan.Version, plan.Version)
	}
	ev := h.Art.Plan.Relations[0]
	var rows [][]any
	var entries []batch.Entry
	now, hiTime := h.Now, int64(oracleBase)
	for i := 0; i < 500; {
		now += int64(r.IntN(300)) * 1e6
		e := batch.Entry{Time: now}
		if r.IntN(8) == 0 {
			e.Items = append(e.Items, batch.Item{Kind: batch.KindTick})
		}
		for n := 1 + r.IntN(8); n > 0 && i < 500; n-- {
			hiTime += int64(r.IntN(40))
			ts := hiTime - int64(r.IntN(1500))
			var v any = int64(r.IntN(9) - 4)
			if r.IntN(10) == 0 {
				v = nil
			}
			row := []any{fmt.Sprintf("k%d", r.IntN(7)), int64(r.IntN(8)), v, ts}
			b, err := ev.EncodeRow(row)
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, row)
			e.Items = append(e.Items, h.AppendItem(sql.Append{Stream: "ev", Key: plan.KeyBytes(row[0]), Value: b, EventTimeMs: ts}))
			i++
		}
		entries = append(entries, e)
	}
	for range 8 {
		now += 3e9
		entries = append(entries, batch.Entry{Time: now, Items: []batch.Item{{Kind: batch.KindTick}}})
	}
	h.Apply(randomGroups(r, entries))
	if d := h.Stream("ev.dead"); len(d) > 0 {
		t.Fatalf("%d dead letters, first %q", len(d), d[0].Value)
	}
	for _, s := range []string{"tw.dead", "agg.dead", "vt.by_key.dead", "vr.by_key.dead", "va.by_key.dead", "vj.by_key.dead"} {
		if d := h.Stream(s); len(d) > 0 {
			t.Fatalf("%s: %d dead letters, first %q", s, len(d), d[0].Value)
		}
	}
	for _, v := range []string{"vt"} {
		if n := len(h.Stream(v + plan.SuffixLate)); n > 0 {
			t.Errorf("%s: %d late rows: a view over a view's final rows is never late", v, n)
		}
	}
	for _, rec := range h.Stream("vj" + plan.SuffixLate) {
		if rec.Value[0] == 'R' {
			t.Errorf("vj: a late row of the view side")
		}
	}
	lateTW := h.lateRows("tw", &ev)
	var lateVJ [][]any
	for _, rec := range h.Stream("vj" + plan.SuffixLate) {
		row, err := ev.DecodeRecord(rec.Value[1:])
		if err != nil {
			t.Fatal(err)
		}
		lateVJ = append(lateVJ, row)
	}
	forTW, ok1 := subtract(rows, lateTW)
	forVJ, ok2 := subtract(rows, lateVJ)
	if !ok1 || !ok2 {
		t.Fatalf("a late row is no input row")
	}
	wTW, wVT := h.watermark("tw"), h.watermark("vt")

	schema := fmt.Sprintf("vv%d", r.Uint32())
	pgExec(t, conn, "CREATE SCHEMA "+schema)
	defer func() { _, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") }()
	pgExec(t, conn, "SET search_path TO "+schema)
	for tbl, rs := range map[string][][]any{"ev": rows, "ev_tw": forTW, "ev_vj": forVJ} {
		pgExec(t, conn, "CREATE TABLE "+tbl+" (k text, g bigint, v bigint, ts bigint)")
		if _, err := conn.CopyFrom(context.Background(), pgx.Identifier{tbl}, []string{"k", "g", "v", "ts"}, pgx.CopyFromRows(rs)); err != nil {
			t.Fatal(err)
		}
	}
	// tw over its on-time rows, windows closed (the view over it sees only those).
	tw := func(from string) string {
		return fmt.Sprintf(`(SELECT * FROM (SELECT g, count(*) AS c, sum(v)::bigint AS s, max(v) AS mx, ts - ts %% %[1]d + %[1]d AS we
		    FROM %[2]s GROUP BY g, 5) q WHERE we + %[3]d <= %[4]d)`, size, from, lateness, wTW)
	}
	queries := map[string]string{
		"tw": `SELECT * FROM ` + tw("ev_tw") + ` x`,
		"vt": fmt.Sprintf(`SELECT we, max(c), sum(s)::bigint, count(*) FROM %s t WHERE we < %d GROUP BY we`, tw("ev_tw"), wVT),
		"vr": `SELECT g, count(*), sum(c)::bigint, min(mx) FROM ` + tw("ev_tw") + ` t WHERE c > 1 GROUP BY g`,
		"vp": `SELECT g, c * 2, we FROM ` + tw("ev_tw") + ` t WHERE s IS NOT NULL`,
		"vj": fmt.Sprintf(`SELECT e.k, e.v, t.c FROM ev_vj e JOIN %s t ON e.g = t.g AND e.ts >= t.we - %d AND e.ts < t.we WHERE e.v >= t.mx - 2`, tw("ev_tw"), size),
		"va": `SELECT c % 3, count(*), sum(s)::bigint, avg(s)::float8 FROM (SELECT g, count(*) AS c, sum(v) AS s FROM ev WHERE v <> 0 GROUP BY g) a
		       WHERE g <> 1 GROUP BY c % 3`,
	}
	for _, name := range []string{"tw", "vt", "vr", "vp", "vj", "va"} {
		want := canonRows(pgRows(t, conn, queries[name]))
		if len(want) == 0 && name != "vj" {
			t.Errorf("%s: PostgreSQL's answer is empty", name)
		}
		diffRows(t, fmt.Sprintf("%s (size %d, lateness %d, ooo %d)", name, size, lateness, ooo), canonRows(h.View(name)), want)
	}
	return len(lateTW) + len(lateVJ)
}
