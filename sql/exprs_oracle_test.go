package sql_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/testutil/pgtest"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// Scalar expressions, with PostgreSQL as the oracle: a projection view computing each
// expression over random rows (NULLs included) equals the same SELECT on PostgreSQL.
var oracleExprs = []string{
	"a + b", "a - b", "a * b", "a / NULLIF(b, 0)", "a % NULLIF(b, 0)", "-a", "abs(a)",
	"x * 2.5", "x / 4", "floor(x)", "ceil(x)", "round(x)", "a + x",
	"a < b", "a = b OR x > 0", "NOT (a >= b)", "a BETWEEN -3 AND 3", "a IN (1, 2, 3)", "a NOT IN (1, 2)",
	"a IS NULL", "x IS NOT NULL AND s IS NULL",
	"CASE a WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE s END", "CASE WHEN a > 0 THEN x ELSE a END",
	"coalesce(s, 'none')", "coalesce(a, b, 0)", "nullif(a, 0)",
	"lower(s)", "upper(s)", "length(s)", "char_length(s)", "substr(s, 2)", "substr(s, 2, 3)", "substring(s from 1 for 2)",
	"trim(s)", "replace(s, 'a', 'x')", "strpos(s, 'b')", "reverse(s)", "s || '-' || a", "s LIKE '%a%'", "s NOT LIKE 'b_'",
	"date_trunc('minute', ts)", "date_trunc('hour', ts)", "date_trunc('day', ts)", "ts + INTERVAL '90 seconds'",
	"ts - INTERVAL '1 hour'", "ts > TIMESTAMP '2024-01-01 00:30:00'", "ts - TIMESTAMP '2024-01-01 00:00:00' > INTERVAL '20 minutes'",
	"CAST(a AS double precision)", "CAST(x AS bigint)", "CAST(a AS text)", "CAST(s = 'ab' AS text)",
	"(a + 1) * (b - 1) - 2 * a",
}

func TestExpressionsMatchPostgres(t *testing.T) {
	db := pgtest.New(t)
	conn := db.Connect(t)
	var cols []string
	for i, e := range oracleExprs {
		cols = append(cols, fmt.Sprintf("%s AS c%d", e, i))
	}
	list := strings.Join(cols, ",\n  ")
	h := newHarness(t, 3, `CREATE STREAM e (k text, a bigint, b bigint, x double precision, s text, ts timestamp)
  WITH (key = 'k', event_time = 'ts');
CREATE MATERIALIZED VIEW ex AS SELECT k,
  `+list+`
FROM e;`)
	r := rand.New(rand.NewPCG(1, 2))
	s := h.Art.Plan.Relations[0]
	var rows [][]any
	var items []batch.Item
	for i := range 300 {
		maybe := func(v any) any {
			if r.IntN(7) == 0 {
				return nil
			}
			return v
		}
		var str strings.Builder
		for range r.IntN(6) {
			str.WriteByte(" abc"[r.IntN(4)])
		}
		row := []any{fmt.Sprintf("k%d", i), maybe(int64(r.IntN(11) - 5)), maybe(int64(r.IntN(11) - 5)),
			maybe(float64(r.IntN(41)-20) / 4), maybe(str.String()), oracleBase + int64(r.IntN(3_600_000*30))}
		rows = append(rows, row)
		b, err := s.EncodeRow(row)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, h.AppendItem(sql.Append{Stream: "e", Key: plan.KeyBytes(row[0]), Value: b, EventTimeMs: row[5].(int64)}))
	}
	h.Apply([][]batch.Entry{{{Time: h.Now + 1e9, Items: items}}})
	if dead := h.Stream("e.dead"); len(dead) > 0 {
		t.Fatalf("%d dead letters, first %q", len(dead), dead[0].Value)
	}

	pgExec(t, conn, `CREATE TABLE e (k text COLLATE "C", a bigint, b bigint, x double precision, s text COLLATE "C", ts timestamp)`)
	var pgRowsIn [][]any
	for _, row := range rows {
		pr := slices.Clone(row)
		pr[5] = time.UnixMilli(row[5].(int64)).UTC()
		pgRowsIn = append(pgRowsIn, pr)
	}
	if _, err := conn.CopyFrom(context.Background(), pgx.Identifier{"e"}, []string{"k", "a", "b", "x", "s", "ts"}, pgx.CopyFromRows(pgRowsIn)); err != nil {
		t.Fatal(err)
	}
	got := byKey(h.View("ex"))
	want := byKey(pgRows(t, conn, "SELECT k,\n  "+list+"\nFROM e"))
	if len(got) != len(want) {
		t.Fatalf("%d rows, PostgreSQL %d", len(got), len(want))
	}
	bad := 0
	for k, g := range got {
		w := want[k]
		for i := range oracleExprs {
			if gs, ws := canonRow([]any{g[i+1]}), canonRow([]any{w[i+1]}); gs != ws && bad < 20 {
				bad++
				t.Errorf("row %v: %s = %s, PostgreSQL says %s", rows[keyIndex(k)], oracleExprs[i], gs, ws)
			}
		}
	}
}

func byKey(rows [][]any) map[string][]any {
	m := map[string][]any{}
	for _, r := range rows {
		for i, v := range r {
			switch x := v.(type) {
			case time.Time:
				r[i] = x.UnixMilli()
			case bool:
				r[i] = fmt.Sprint(x)
			}
		}
		m[r[0].(string)] = r
	}
	return m
}

func keyIndex(k string) int {
	var i int
	fmt.Sscanf(k, "k%d", &i)
	return i
}
