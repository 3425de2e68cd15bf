package sql_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/testutil/pgtest"
	"github.com/lockstepdb/lockstep/procedures/window"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// The correctness rule of DESIGN.md section 11, with PostgreSQL as the oracle: for
// random rows, random log-entry boundaries, batch times and ApplyBatch groupings, each
// view's contents after the last watermark equal the same query run as a batch on
// PostgreSQL over the view's on-time rows (all rows less its late stream), windows
// written as arithmetic on epoch milliseconds; and every row of a late stream is an
// input row whose windows had all closed.

const oracleBase = int64(1_704_067_200_000) // 2024-01-01 UTC, ms

// oracleCase is one random run's parameters.
type oracleCase struct {
	parts                 int
	oooMs, sizeMs, lateMs int64
	pred                  string
	rows                  [][]any // k, g, v, d, ts (ms)
}

var oraclePreds = []string{"v > 0", "v IS NOT NULL AND g <> 2", "NOT (v BETWEEN -2 AND 2) OR d IS NULL",
	"k IN ('a', 'b', 'c')", "length(k) = 1 AND v % 2 = 0", "CASE WHEN g > 2 THEN v < 3 ELSE d > 0 END", "true"}

func (c *oracleCase) script() string {
	return fmt.Sprintf(`
CREATE STREAM ev (k text, g bigint, v bigint, d double precision, ts timestamp)
  WITH (key = 'k', event_time = 'ts', out_of_orderness = '%d ms', idle_timeout = '2 seconds');
CREATE MATERIALIZED VIEW agg AS
  SELECT g, count(*) AS c, sum(v) AS s, min(v) AS mn, max(d) AS mx, avg(v) AS a,
         count(DISTINCT v %% 3) AS cd, count(d) AS nd
  FROM ev WHERE %s GROUP BY g;
CREATE MATERIALIZED VIEW tw WITH (allowed_lateness = '%d ms') AS
  SELECT window_start, window_end, g, count(*) AS c, sum(v) AS s, min(d) AS mn, max(k) AS mk
  FROM TUMBLE(ev, ts, INTERVAL '%d milliseconds') WHERE %s
  GROUP BY window_start, window_end, g EMIT ON WINDOW CLOSE;
CREATE MATERIALIZED VIEW hw AS
  SELECT window_start, lower(k) AS lk, count(*) AS c, sum(d) AS sd
  FROM HOP(ev, ts, INTERVAL '1 second', INTERVAL '3 seconds')
  GROUP BY window_start, lower(k) HAVING count(*) > 1 EMIT CHANGES;
CREATE MATERIALIZED VIEW sw WITH (allowed_lateness = '%d ms') AS
  SELECT window_start, window_end, lower(k) AS lk, count(*) AS c, sum(v) AS s, count(DISTINCT g) AS dg, max(d) AS mx
  FROM SESSION(ev, ts, INTERVAL '700 milliseconds') WHERE %s
  GROUP BY window_start, window_end, lower(k) EMIT CHANGES;
CREATE MATERIALIZED VIEW pj AS
  SELECT k, v * 2 + g AS x, CASE WHEN v > 5 THEN 'hi' WHEN v IS NULL THEN 'none' ELSE 'lo' END AS c,
         coalesce(d, 0.5) AS dd, upper(k) || '-' || g AS tag
  FROM ev WHERE v %% 2 = 0 OR d < 0;
`, c.oooMs, c.pred, c.lateMs, c.sizeMs, c.pred, c.lateMs, c.pred)
}

func randomCase(r *rand.Rand) *oracleCase {
	c := &oracleCase{parts: 1 + r.IntN(4), oooMs: int64(r.IntN(4)) * 500, sizeMs: []int64{1000, 2000, 5000}[r.IntN(3)],
		lateMs: int64(r.IntN(3)) * 1000, pred: oraclePreds[r.IntN(len(oraclePreds))]}
	n := 50 + r.IntN(250)
	for i := range n {
		var v, d any
		if r.IntN(8) > 0 {
			v = int64(r.IntN(21) - 10)
		}
		if r.IntN(6) > 0 {
			d = float64(r.IntN(41)-20) / 2
		}
		ts := oracleBase + int64(i)*100 - int64(r.IntN(3500)) + int64(r.IntN(500))
		k := string(rune('a' + r.IntN(6)))
		if r.IntN(5) == 0 {
			k = strings.ToUpper(k)
		}
		c.rows = append(c.rows, []any{k, int64(r.IntN(5)), v, d, ts})
	}
	return c
}

func TestViewsMatchPostgres(t *testing.T) {
	db := pgtest.New(t)
	conn := db.Connect(t)
	seeds := 30
	if testing.Short() {
		seeds = 3
	}
	lateSeen := 0
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 23))
		c := randomCase(r)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			lateSeen += runOracleCase(t, conn, r, c)
		})
	}
	if lateSeen == 0 {
		t.Errorf("no run had a late row: the test does not exercise lateness")
	}
}

// runOracleCase runs one case and returns the number of late rows.
func runOracleCase(t *testing.T, conn *pgx.Conn, r *rand.Rand, c *oracleCase) int {
	h := newHarness(t, c.parts, c.script())
	ev := h.Art.Plan.Relations[0]
	h.Apply(randomGroups(r, oracleEntries(t, r, h, c)))
	if dead := h.Stream("ev.dead"); len(dead) > 0 {
		t.Fatalf("%d dead letters, first %q", len(dead), dead[0].Value)
	}

	schema := fmt.Sprintf("o%d", r.Uint32())
	pgExec(t, conn, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	pgExec(t, conn, "SET search_path TO "+schema)
	late := 0
	for _, tbl := range []string{"ev", "ev_tw", "ev_hw", "ev_sw"} {
		pgExec(t, conn, "CREATE TABLE "+tbl+" (k text COLLATE \"C\", g bigint, v bigint, d double precision, ts bigint)")
	}
	load := func(tbl string, rows [][]any) {
		if _, err := conn.CopyFrom(context.Background(), pgx.Identifier{tbl}, []string{"k", "g", "v", "d", "ts"}, pgx.CopyFromRows(rows)); err != nil {
			t.Fatal(err)
		}
	}
	load("ev", c.rows)
	wm := map[string]int64{}
	for _, v := range []string{"tw", "hw", "sw"} {
		lateRows := h.lateRows(v, &ev)
		late += len(lateRows)
		w := h.watermark(v)
		wm[v] = w
		onTime, ok := subtract(c.rows, lateRows)
		if !ok {
			t.Fatalf("view %s: its late stream holds rows that are not input rows", v)
		}
		vp := h.ViewPlan(v)
		for _, lr := range lateRows {
			// A late row fell in no window still open: the last of its windows ended by
			// the watermark less the allowed lateness.
			ts := lr[4].(int64)
			if end := ts - ts%1000 + 1000; vp.Window.Kind == plan.WindowTumble && ts-ts%vp.Window.SizeMs+vp.Window.SizeMs+vp.AllowedLatenessMs > w {
				t.Errorf("view %s: late row %v has a window open at the final watermark %d", v, lr, w)
			} else if vp.Window.Kind == plan.WindowHop && end+vp.AllowedLatenessMs > w {
				t.Errorf("view %s: late row %v has a window open at the final watermark %d", v, lr, w)
			} else if vp.Window.Kind == plan.WindowSession && ts >= w-vp.AllowedLatenessMs {
				t.Errorf("view %s: late row %v is within the allowed lateness of the final watermark %d", v, lr, w)
			}
		}
		load("ev_"+v, onTime)
	}
	S, L := c.sizeMs, c.lateMs
	queries := map[string]string{
		"agg": `SELECT g, count(*), sum(v)::bigint, min(v), max(d), avg(v)::float8, count(DISTINCT v % 3), count(d)
		        FROM ev WHERE ` + c.pred + ` GROUP BY g`,
		"tw": fmt.Sprintf(`SELECT * FROM (SELECT ts - ts %% %d AS ws, ts - ts %% %d + %d AS we, g, count(*), sum(v)::bigint, min(d), max(k)
		        FROM ev_tw WHERE %s GROUP BY 1, 2, 3) q WHERE we + %d <= %d`, S, S, S, c.pred, L, wm["tw"]),
		"hw": fmt.Sprintf(`SELECT * FROM (SELECT ws, lower(k), count(*), sum(d)
		        FROM ev_hw, generate_series(ts - ts %% 1000 - 2000, ts - ts %% 1000, 1000) AS ws
		        GROUP BY ws, lower(k) HAVING count(*) > 1) q WHERE ws + 3000 <= %d`, wm["hw"]),
		// Sessions as gaps and islands: a row starts a session when it comes a gap or
		// more after the previous row of its key.
		"sw": fmt.Sprintf(`WITH f AS (SELECT * FROM ev_sw WHERE %s),
		        o AS (SELECT *, CASE WHEN ts >= lag(ts) OVER (PARTITION BY lower(k) ORDER BY ts) + 700 THEN 1 ELSE 0 END AS brk FROM f),
		        s AS (SELECT *, sum(brk) OVER (PARTITION BY lower(k) ORDER BY ts ROWS UNBOUNDED PRECEDING) AS sid FROM o)
		      SELECT * FROM (SELECT min(ts) AS ws, max(ts) + 700 AS we, lower(k), count(*), sum(v)::bigint, count(DISTINCT g), max(d)
		        FROM s GROUP BY lower(k), sid) q WHERE we <= %d`, c.pred, wm["sw"]),
		"pj": `SELECT k, v * 2 + g, CASE WHEN v > 5 THEN 'hi' WHEN v IS NULL THEN 'none' ELSE 'lo' END,
		        coalesce(d, 0.5), upper(k) || '-' || g FROM ev WHERE v % 2 = 0 OR d < 0`,
	}
	for _, v := range []string{"agg", "tw", "hw", "sw", "pj"} {
		got := canonRows(h.View(v))
		want := canonRows(pgRows(t, conn, queries[v]))
		if !slices.Equal(got, want) {
			t.Errorf("view %s (parts %d, ooo %d, size %d, lateness %d, pred %s): %d rows, PostgreSQL %d\n got %v\nwant %v",
				v, c.parts, c.oooMs, c.sizeMs, c.lateMs, c.pred, len(got), len(want), got, want)
		}
	}
	return late
}

// oracleEntries is the log of a case: random entries of 1..8 rows, batch time moving
// 0..300 ms, some ticks, then ticks past the idle timeout, so that every partition is
// idle and the watermark at its highest.
func oracleEntries(t testing.TB, r *rand.Rand, h *harness, c *oracleCase) []batch.Entry {
	ev := h.Art.Plan.Relations[0]
	var entries []batch.Entry
	now := h.Now
	for i := 0; i < len(c.rows); {
		now += int64(r.IntN(300)) * 1e6
		e := batch.Entry{Time: now}
		if r.IntN(10) == 0 {
			e.Items = []batch.Item{{Kind: batch.KindTick}}
		}
		for n := 1 + r.IntN(8); n > 0 && i < len(c.rows); n-- {
			b, err := ev.EncodeRow(c.rows[i])
			if err != nil {
				t.Fatal(err)
			}
			e.Items = append(e.Items, h.AppendItem(sql.Append{Stream: "ev", Key: plan.KeyBytes(c.rows[i][0]), Value: b, EventTimeMs: c.rows[i][4].(int64)}))
			i++
		}
		entries = append(entries, e)
	}
	for i := 0; i < 4; i++ {
		now += 3e9
		entries = append(entries, batch.Entry{Time: now, Items: []batch.Item{{Kind: batch.KindTick}}})
	}
	return entries
}

// randomGroups splits entries into ApplyBatch groups of 1..5.
func randomGroups(r *rand.Rand, entries []batch.Entry) [][]batch.Entry {
	var groups [][]batch.Entry
	for i := 0; i < len(entries); {
		n := min(1+r.IntN(5), len(entries)-i)
		groups = append(groups, entries[i:i+n])
		i += n
	}
	return groups
}

// lateRows decodes a view's late stream.
func (h *harness) lateRows(view string, in *plan.Schema) [][]any {
	var out [][]any
	for _, rec := range h.Stream(view + plan.SuffixLate) {
		row, err := in.DecodeRow(rec.Value)
		if err != nil {
			h.T.Fatal(err)
		}
		out = append(out, row)
	}
	return out
}

// watermark is a windowed view's operator watermark: the least over partitions.
func (h *harness) watermark(view string) int64 {
	w := int64(math.MaxInt64)
	for _, p := range h.F.Engine().Partitions() {
		st, err := window.ReadOperator(p, view+plan.SuffixOperator)
		if err != nil {
			h.T.Fatal(err)
		}
		w = min(w, st.Watermark)
	}
	return w
}

// subtract returns all less the multiset sub, and whether sub was contained in all.
func subtract(all, sub [][]any) ([][]any, bool) {
	count := map[string]int{}
	for _, r := range sub {
		count[canonRow(r)]++
	}
	var out [][]any
	for _, r := range all {
		if k := canonRow(r); count[k] > 0 {
			count[k]--
			continue
		}
		out = append(out, r)
	}
	for _, n := range count {
		if n > 0 {
			return out, false
		}
	}
	return out, true
}

func pgExec(t *testing.T, conn *pgx.Conn, q string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func pgRows(t *testing.T, conn *pgx.Conn, q string) [][]any {
	t.Helper()
	rows, err := conn.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// canonRow renders a row comparably: integers exactly, doubles to 12 significant digits
// (an average's last bit may differ between a double and PostgreSQL's numeric).
func canonRow(row []any) string {
	parts := make([]string, len(row))
	for i, v := range row {
		switch x := v.(type) {
		case nil:
			parts[i] = "NULL"
		case int64:
			parts[i] = strconv.FormatInt(x, 10)
		case int32:
			parts[i] = strconv.FormatInt(int64(x), 10)
		case float64:
			parts[i] = strconv.FormatFloat(x, 'g', 12, 64)
		case string:
			parts[i] = strconv.Quote(x)
		default:
			parts[i] = fmt.Sprintf("%T(%v)", v, v)
		}
	}
	return strings.Join(parts, "|")
}

func canonRows(rows [][]any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = canonRow(r)
	}
	slices.Sort(out)
	return out
}
