package sql_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/testutil/pgtest"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// TestOuterPairJoinsMatchPostgres: LEFT, RIGHT and FULL OUTER stream–stream joins over
// random rows (random time bounds, out-of-orderness, disorder, NULL join values, ON terms
// of one side, WHERE over padded rows), random entry boundaries and apply groupings:
// after the last watermark each view equals PostgreSQL's batch outer join over the rows
// less those of its late stream, and the joins keep no row (every unmatched row was
// published padded and freed).
func TestOuterPairJoinsMatchPostgres(t *testing.T) {
	db := pgtest.New(t)
	conn := db.Connect(t)
	padded := 0
	for seed := range 6 {
		r := rand.New(rand.NewPCG(uint64(seed), 47))
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { padded += runOuterCase(t, conn, r) })
	}
	if padded == 0 {
		t.Errorf("no padded row in any case: outer rows are untested")
	}
}

func runOuterCase(t *testing.T, conn *pgx.Conn, r *rand.Rand) int {
	lo := int64(r.IntN(2000)) - 1000
	hi := lo + int64(r.IntN(2000))
	ooo := r.IntN(3) * 300
	script := fmt.Sprintf(`
CREATE STREAM l (id text, g bigint, ts timestamp, v bigint) WITH (key = 'id', event_time = 'ts', out_of_orderness = '%[1]d milliseconds');
CREATE STREAM r (id text, g bigint, ts timestamp, w bigint) WITH (key = 'id', event_time = 'ts', out_of_orderness = '%[1]d milliseconds');
CREATE MATERIALIZED VIEW lj AS SELECT l.id AS lid, r.id AS rid, l.v + r.w AS s FROM l LEFT JOIN r
  ON l.g = r.g AND r.ts BETWEEN l.ts + INTERVAL '%[2]d milliseconds' AND l.ts + INTERVAL '%[3]d milliseconds';
CREATE MATERIALIZED VIEW rj AS SELECT l.id AS lid, r.id AS rid, r.w FROM l RIGHT OUTER JOIN r
  ON r.g = l.g AND r.ts >= l.ts + INTERVAL '%[2]d milliseconds' AND r.ts <= l.ts + INTERVAL '%[3]d milliseconds' AND l.v > 2
  WHERE COALESCE(l.v, 0) <> 5;
CREATE MATERIALIZED VIEW fj AS SELECT l.id AS lid, r.id AS rid FROM l FULL OUTER JOIN r
  ON l.g = r.g AND l.v < r.w AND r.ts BETWEEN l.ts + INTERVAL '%[2]d milliseconds' AND l.ts + INTERVAL '%[3]d milliseconds';
`, ooo, lo, hi)
	h := newHarness(t, 1+r.IntN(4), script)
	ls, rs := h.Art.Plan.Relations[0], h.Art.Plan.Relations[1]
	var lrows, rrows [][]any
	var entries []batch.Entry
	now, hiTime := h.Now, int64(oracleBase)
	for i := 0; i < 500; {
		now += int64(r.IntN(300)) * 1e6
		e := batch.Entry{Time: now}
		for n := 1 + r.IntN(8); n > 0 && i < 500; n-- {
			hiTime += int64(r.IntN(60))
			ts := hiTime - int64(r.IntN(1500)) // disorder up to 1.5 s
			var g any = int64(r.IntN(4))
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
	// A row of each side far ahead, with a NULL join value (it pairs with nothing and is
	// kept by no join), moves the watermark past every other row's bound.
	now += 1e6
	closers := batch.Entry{Time: now}
	for _, c := range []struct {
		s    plan.Schema
		rows *[][]any
	}{{ls, &lrows}, {rs, &rrows}} {
		row := []any{c.s.Name + "end", nil, hiTime + 100_000, int64(0)}
		b, err := c.s.EncodeRecord(row)
		if err != nil {
			t.Fatal(err)
		}
		*c.rows = append(*c.rows, row)
		closers.Items = append(closers.Items, h.AppendItem(sql.Append{Stream: c.s.Name, Key: plan.KeyBytes(row[0]), Value: b, EventTimeMs: row[2].(int64)}))
	}
	entries = append(entries, closers)
	for range 5 {
		now += 3e9
		entries = append(entries, batch.Entry{Time: now, Items: []batch.Item{{Kind: batch.KindTick}}})
	}
	h.Apply(randomGroups(r, entries))
	queries := map[string]string{
		"lj": fmt.Sprintf(`SELECT l.id, r.id, l.v + r.w FROM l LEFT JOIN r ON l.g = r.g AND r.ts BETWEEN l.ts + %d AND l.ts + %d`, lo, hi),
		"rj": fmt.Sprintf(`SELECT l.id, r.id, r.w FROM l RIGHT OUTER JOIN r ON r.g = l.g AND r.ts >= l.ts + %d AND r.ts <= l.ts + %d AND l.v > 2
		  WHERE COALESCE(l.v, 0) <> 5`, lo, hi),
		"fj": fmt.Sprintf(`SELECT l.id, r.id FROM l FULL OUTER JOIN r ON l.g = r.g AND l.v < r.w AND r.ts BETWEEN l.ts + %d AND l.ts + %d`, lo, hi),
	}
	padded, late := 0, 0
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
		schema := fmt.Sprintf("oj%d", r.Uint32())
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
		got := h.View(name)
		for _, row := range got {
			if row[0] == nil || row[1] == nil {
				padded++
			}
		}
		diffRows(t, fmt.Sprintf("%s (bounds %d..%d ms, ooo %d)", name, lo, hi, ooo), canonRows(got), canonRows(pgRows(t, conn, q)))
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		for _, tbl := range []string{name + plan.SuffixPairs, name + plan.SuffixRightPairs, name + plan.SuffixUnmatched, name + plan.SuffixExpiry} {
			if n := tableLen(h, tbl); n != 0 {
				t.Errorf("%s: table %s keeps %d rows after the last watermark", name, tbl, n)
			}
		}
	}
	t.Logf("%d padded rows, %d late rows", padded, late)
	return padded
}

// tableLen counts the rows of table on every partition.
func tableLen(h *harness, table string) int {
	n := 0
	for _, p := range h.F.Engine().Partitions() {
		p.Scan(table, partition.ScanOptions{}, func(_, _ []byte) bool { n++; return true })
	}
	return n
}
