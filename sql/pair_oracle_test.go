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

// TestPairJoinsMatchPostgres: stream–stream joins over random rows (random time bounds,
// out-of-orderness, disorder, NULL join values, a join column that is not the key, so
// that rows cross the exchange), random entry boundaries and apply groupings: after the
// last watermark each view equals PostgreSQL's batch join over the rows less those of
// its late stream.
func TestPairJoinsMatchPostgres(t *testing.T) {
	db := pgtest.New(t)
	conn := db.Connect(t)
	late := 0
	for seed := range 6 {
		r := rand.New(rand.NewPCG(uint64(seed), 31))
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { late += runPairCase(t, conn, r) })
	}
	if late == 0 {
		t.Errorf("no row was late in any case: lateness is untested")
	}
}

func runPairCase(t *testing.T, conn *pgx.Conn, r *rand.Rand) int {
	lo := int64(r.IntN(4000)) - 2000
	hi := lo + int64(r.IntN(3000))
	size := int64(500 * (1 + r.IntN(4)))
	ooo := r.IntN(3) * 300
	script := fmt.Sprintf(`
CREATE STREAM l (id text, g bigint, ts timestamp, v bigint) WITH (key = 'id', event_time = 'ts', out_of_orderness = '%[1]d milliseconds');
CREATE STREAM r (id text, g bigint, ts timestamp, w bigint) WITH (key = 'id', event_time = 'ts', out_of_orderness = '%[1]d milliseconds', format = 'map');
CREATE MATERIALIZED VIEW iv AS SELECT l.id AS lid, r.id AS rid, l.v + r.w AS s FROM l JOIN r
  ON l.g = r.g AND r.ts BETWEEN l.ts + INTERVAL '%[2]d milliseconds' AND l.ts + INTERVAL '%[3]d milliseconds' WHERE l.v <> 3;
CREATE MATERIALIZED VIEW up AS SELECT l.id AS lid, r.id AS rid FROM l JOIN r ON r.g = l.g AND r.ts < l.ts + INTERVAL '%[3]d milliseconds';
CREATE MATERIALIZED VIEW sw AS SELECT a.g, a.window_start AS ws FROM TUMBLE(l, ts, INTERVAL '%[4]d milliseconds') a
  JOIN TUMBLE(r, ts, INTERVAL '%[4]d milliseconds') b ON a.g = b.g AND a.window_start = b.window_start GROUP BY a.g, a.window_start;
CREATE MATERIALIZED VIEW un AS SELECT l.id AS lid, r.id AS rid FROM l JOIN r ON l.g = r.g WHERE l.v > r.w;
`, ooo, lo, hi, size)
	h := newHarness(t, 1+r.IntN(4), script)
	ls, rs := h.Art.Plan.Relations[0], h.Art.Plan.Relations[1]
	var lrows, rrows [][]any
	var entries []batch.Entry
	now, hiTime := h.Now, int64(oracleBase)
	for i := 0; i < 600; {
		now += int64(r.IntN(300)) * 1e6
		e := batch.Entry{Time: now}
		for n := 1 + r.IntN(8); n > 0 && i < 600; n-- {
			hiTime += int64(r.IntN(40))
			ts := hiTime - int64(r.IntN(1500)) // disorder up to 1.5 s
			var g any = int64(r.IntN(3))
			if r.IntN(12) == 0 {
				g = nil
			}
			s, rows := ls, &lrows
			if r.IntN(2) == 0 {
				s, rows = rs, &rrows
			}
			row := []any{fmt.Sprintf("%s%d", s.Name, i), g, ts, int64(r.IntN(8))}
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
	for range 4 {
		now += 3e9
		entries = append(entries, batch.Entry{Time: now, Items: []batch.Item{{Kind: batch.KindTick}}})
	}
	h.Apply(randomGroups(r, entries))
	queries := map[string]string{
		"iv": fmt.Sprintf(`SELECT l.id, r.id, l.v + r.w FROM l JOIN r ON l.g = r.g AND r.ts BETWEEN l.ts + %d AND l.ts + %d WHERE l.v <> 3`, lo, hi),
		"up": fmt.Sprintf(`SELECT l.id, r.id FROM l JOIN r ON r.g = l.g AND r.ts < l.ts + %d`, hi),
		"sw": fmt.Sprintf(`SELECT DISTINCT a.g, a.ts - a.ts %% %[1]d FROM l a JOIN r b ON a.g = b.g AND a.ts - a.ts %% %[1]d = b.ts - b.ts %% %[1]d`, size),
		"un": `SELECT l.id, r.id FROM l JOIN r ON l.g = r.g WHERE l.v > r.w`,
	}
	late := 0
	for name, q := range queries {
		lok, rok := lrows, rrows
		for _, rec := range h.Stream(name + plan.SuffixLate) {
			s, rows := ls, &lok
			if rec.Value[0] == 'R' {
				s, rows = rs, &rok
			}
			row, err := s.DecodeRecord(rec.Value[1:])
			if err != nil {
				t.Fatal(err)
			}
			var ok bool
			if *rows, ok = subtract(*rows, [][]any{row}); !ok {
				t.Fatalf("%s: late row %v is no input row", name, row)
			}
			late++
		}
		schema := fmt.Sprintf("pj%d", r.Uint32())
		pgExec(t, conn, "CREATE SCHEMA "+schema)
		pgExec(t, conn, "SET search_path TO "+schema)
		pgExec(t, conn, `CREATE TABLE l (id text, g bigint, ts bigint, v bigint)`)
		pgExec(t, conn, `CREATE TABLE r (id text, g bigint, ts bigint, w bigint)`)
		for tbl, rows := range map[string][][]any{"l": lok, "r": rok} {
			cols := []string{"id", "g", "ts", "v"}
			if tbl == "r" {
				cols[3] = "w"
			}
			if _, err := conn.CopyFrom(context.Background(), pgx.Identifier{tbl}, cols, pgx.CopyFromRows(rows)); err != nil {
				t.Fatal(err)
			}
		}
		diffRows(t, fmt.Sprintf("%s (bounds %d..%d ms, size %d, ooo %d)", name, lo, hi, size, ooo), canonRows(h.View(name)), canonRows(pgRows(t, conn, q)))
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	}
	t.Logf("%d late rows", late)
	return late
}
