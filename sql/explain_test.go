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
