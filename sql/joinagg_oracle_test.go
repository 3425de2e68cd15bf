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

// TestJoinAggregatesMatchPostgres: aggregates over stream–stream joins (plan version 3)
// over random rows, time bounds (constant, and by a column of the left row, as q4's
// B.date_time BETWEEN A.date_time AND A.expires), disorder, NULL join values and bound
// columns, entry boundaries and apply groupings, against PostgreSQL: after the last
// watermark each view equals the batch query over the rows less its join's late rows,
// and so does an aggregate over such a view's changing rows (retractions). The joins
// have freed the rows the watermark passed.
func TestJoinAggregatesMatchPostgres(t *testing.T) {
	db := pgtest.New(t)
	conn := db.Connect(t)
	late := 0
	for seed := range 6 {
		r := rand.New(rand.NewPCG(uint64(seed), 43))
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { late += runJoinAggCase(t, conn, r) })
	}
	if late == 0 {
		t.Errorf("no row was late in any case: lateness is untested")
	}
}

func runJoinAggCase(t *testing.T, conn *pgx.Conn, r *rand.Rand) int {
	lo := int64(r.IntN(2000)) - 1000
	hi := lo + int64(r.IntN(3000))
	ooo := r.IntN(3) * 300
	script := fmt.Sprintf(`
CREATE STREAM l (id text, g bigint, ts timestamp, v bigint, till timestamp) WITH (key = 'id', event_time = 'ts', out_of_orderness = '%[1]d milliseconds');
CREATE STREAM r (id text, g bigint, ts timestamp, w bigint) WITH (key = 'id', event_time = 'ts', out_of_orderness = '%[1]d milliseconds', format = 'map');
CREATE MATERIALIZED VIEW ag AS SELECT l.g, count(*) AS n, sum(r.w) AS s, max(l.v) AS mx, min(r.id) AS mid FROM l JOIN r
  ON l.g = r.g AND r.ts BETWEEN l.ts + INTERVAL '%[2]d milliseconds' AND l.ts + INTERVAL '%[3]d milliseconds'
  WHERE l.v <> 3 GROUP BY l.g HAVING count(*) > 1;
CREATE MATERIALIZED VIEW au AS SELECT l.id, r.g, max(r.w) AS mw, count(*) AS n FROM l, r
  WHERE l.g = r.g AND r.ts BETWEEN l.ts AND l.till GROUP BY l.id, r.g;
CREATE MATERIALIZED VIEW ar AS SELECT n, count(*) AS k, sum(mw) AS smw FROM au GROUP BY n;
`, ooo, lo, hi)
	h := newHarness(t, 1+r.IntN(4), script)
	if h.Art.Plan.Version != plan.Version { // 3 for the constructs, 6 for the side tables
		t.Fatalf("plan version %d, want %d", h.Art.Plan.Version, plan.Version)
	}
	if au := h.ViewPlan("au"); au.Pair.LeftUntil == nil || !au.Pair.HasLo || au.Pair.HasHi {
		t.Fatalf("au: bounds %+v, want a lower bound and the left row's until column", au.Pair)
	}
	ls, rs := h.Art.Plan.Relations[0], h.Art.Plan.Relations[1]
	var lrows, rrows [][]any
	var entries []batch.Entry
	now, hiTime := h.Now, int64(oracleBase)
	for i := 0; i < 600; {
		now += int64(r.IntN(300)) * 1e6
		e := batch.Entry{Time: now}
		for n := 1 + r.IntN(8); n > 0 && i < 600; n-- {
			hiTime += int64(r.IntN(40))
			ts := hiTime - int64(r.IntN(1500))
			var g any = int64(r.IntN(4))
			if r.IntN(12) == 0 {
				g = nil
			}
			s, rows := rs, &rrows
			row := []any{fmt.Sprintf("r%d", i), g, ts, int64(r.IntN(8))}
			if r.IntN(2) == 0 { // a left row, with its bound column
				var till any = ts + int64(r.IntN(3000)) - 500
				if r.IntN(10) == 0 {
					till = nil
				}
				s, rows, row = ls, &lrows, append(row, till)
			}
			b, err := s.EncodeRecord(row)
			if err != nil {
				t.Fatal(err)
			}
			*rows = append(*rows, row)
			e.Items = append(e.Items, h.AppendItem(sql.Append{Stream: s.Name, Key: plan.KeyBytes(row[0]), Value: b, EventTimeMs: ts}))
			i++
		}
		entries = append(entries, e)
	}
	for range 6 {
		now += 3e9
		entries = append(entries, batch.Entry{Time: now, Items: []batch.Item{{Kind: batch.KindTick}}})
	}
	h.Apply(randomGroups(r, entries))
	for _, s := range []string{"l.dead", "r.dead", "ag.by_key.dead", "au.by_key.dead", "au.dead", "ar.by_key.dead"} {
		if d := h.Stream(s); len(d) > 0 {
			t.Fatalf("%s: %d dead letters, first %q", s, len(d), d[0].Value)
		}
	}
	onTime := func(view string) (l, rr [][]any, n int) {
		l, rr = lrows, rrows
		for _, rec := range h.Stream(view + plan.SuffixLate) {
			s, rows := ls, &l
			if rec.Value[0] == 'R' {
				s, rows = rs, &rr
			}
			row, err := s.DecodeRecord(rec.Value[1:])
			if err != nil {
				t.Fatal(err)
			}
			var ok bool
			if *rows, ok = subtract(*rows, [][]any{row}); !ok {
				t.Fatalf("%s: late row %v is no input row", view, row)
			}
			n++
		}
		return l, rr, n
	}
	queries := map[string]string{
		"ag": fmt.Sprintf(`SELECT l.g, count(*), sum(r.w)::bigint, max(l.v), min(r.id) FROM l JOIN r
		    ON l.g = r.g AND r.ts BETWEEN l.ts + %d AND l.ts + %d WHERE l.v <> 3 GROUP BY l.g HAVING count(*) > 1`, lo, hi),
		"au": `SELECT l.id, r.g, max(r.w), count(*) FROM l, r WHERE l.g = r.g AND r.ts BETWEEN l.ts AND l.till GROUP BY l.id, r.g`,
		"ar": `SELECT n, count(*), sum(mw)::bigint FROM (SELECT l.id, r.g, max(r.w) AS mw, count(*) AS n FROM l, r
		    WHERE l.g = r.g AND r.ts BETWEEN l.ts AND l.till GROUP BY l.id, r.g) au GROUP BY n`,
	}
	late := 0
	for _, name := range []string{"ag", "au", "ar"} {
		judge := name
		if name == "ar" {
			judge = "au"
		}
		lok, rok, n := onTime(judge)
		if name != "ar" {
			late += n
		}
		schema := fmt.Sprintf("ja%d", r.Uint32())
		pgExec(t, conn, "CREATE SCHEMA "+schema)
		pgExec(t, conn, "SET search_path TO "+schema)
		pgExec(t, conn, `CREATE TABLE l (id text COLLATE "C", g bigint, ts bigint, v bigint, till bigint)`)
		pgExec(t, conn, `CREATE TABLE r (id text COLLATE "C", g bigint, ts bigint, w bigint)`)
		for tbl, rows := range map[string][][]any{"l": lok, "r": rok} {
			cols := []string{"id", "g", "ts", "v", "till"}
			if tbl == "r" {
				cols = []string{"id", "g", "ts", "w"}
			}
			if _, err := conn.CopyFrom(context.Background(), pgx.Identifier{tbl}, cols, pgx.CopyFromRows(rows)); err != nil {
				t.Fatal(err)
			}
		}
		want := canonRows(pgRows(t, conn, queries[name]))
		if len(want) == 0 {
			t.Errorf("%s: PostgreSQL's answer is empty", name)
		}
		diffRows(t, fmt.Sprintf("%s (bounds %d..%d ms, ooo %d)", name, lo, hi, ooo), canonRows(h.View(name)), want)
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	}
	h.checkFreed(h.ViewPlan("ag"), true)
	h.checkFreed(h.ViewPlan("au"), true)
	t.Logf("%d late rows", late)
	return late
}
