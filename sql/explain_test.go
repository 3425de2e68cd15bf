package sql_test

import (
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/sql"
)

func TestExplain(t *testing.T) {
	art, err := sql.Compile(clicksScript+`
CREATE MATERIALIZED VIEW s AS SELECT window_start, usr, count(*) FROM SESSION(clicks, ts, INTERVAL '30 seconds')
  WHERE page <> 'x' GROUP BY window_start, usr HAVING count(*) > 2;`, sql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := art.Plan.Explain()
	for _, want := range []string{
		"stream clicks (usr text, page text, ts timestamp, n bigint) key usr, event time ts, out of order 1000 ms, idle 2000 ms",
		"per_page.by_key: stream clicks, WHERE (n > 0) → stream per_page.by_key, repartitioned by (page)",
		"per_page.group: running aggregate per group (table per_page.state), SELECT page AS page, count(*) AS clicks, sum(n) AS total",
		"per_minute.window: TUMBLE 60000 ms, allowed lateness 0 ms (operator per_minute.w), SELECT window_start AS window_start",
		"EMIT ON WINDOW CLOSE",
		"big.project: stream clicks, WHERE (n >= 2), SELECT usr AS usr, upper(page) AS p, (n * 2) AS twice",
		"s.window: SESSION gap 30000 ms", "HAVING (count(*) > 2)", "late rows → s.late",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("EXPLAIN lacks %q:\n%s", want, got)
		}
	}
}

// EXPLAIN of stream–stream joins: the routers, the join key, the derived time bounds
// and the kept-row tables.
func TestExplainJoins(t *testing.T) {
	art, err := sql.Compile(nexmarkScript("1 second"), sql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := art.Plan.Explain()
	for _, want := range []string{
		"plan version 6",
		"q3.left: stream auction → stream q3.by_key, repartitioned by seller\n",
		"q3.join: JOIN person ON seller = id, right time − left time in [−∞, +∞]",
		"q8.right: stream auction → stream q8.by_key, repartitioned by seller, watermark: event time − 1000 ms",
		"q8.join: JOIN auction ON id = seller, right time − left time in [-9999 ms, 9999 ms] (kept rows: tables q8.pairs, q8.rpairs, q8.expiry)",
		"one row per (person.id, person.name, person.window_start), SELECT person.id AS id",
		"fresh.join: JOIN bid ON id = auction, right time − left time in [0 ms, 2000 ms]",
		"near.join: JOIN auction ON auction = id, right time − left time in [-500 ms, 999 ms]",
		"late rows → near.late",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("EXPLAIN lacks %q:\n%s", want, got)
		}
	}
}
