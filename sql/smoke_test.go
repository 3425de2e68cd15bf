package sql_test

import (
	"fmt"
	"testing"
)

func TestSmokeViews(t *testing.T) {
	h := newHarness(t, 4, `
CREATE STREAM clicks (usr text, page text, ts timestamp, n bigint)
  WITH (key = 'usr', event_time = 'ts', out_of_orderness = '1 second', idle_timeout = '2 seconds');
CREATE MATERIALIZED VIEW per_page AS
  SELECT page, count(*) AS clicks, sum(n) AS total FROM clicks WHERE n > 0 GROUP BY page;
CREATE MATERIALIZED VIEW per_minute AS
  SELECT window_start, page, count(*) AS c, max(n) FROM TUMBLE(clicks, ts, INTERVAL '1 minute')
  GROUP BY window_start, page EMIT ON WINDOW CLOSE;
CREATE MATERIALIZED VIEW big AS SELECT usr, upper(page) AS p, n * 2 AS twice FROM clicks WHERE n >= 2;
`)
	h.insert(`INSERT INTO clicks VALUES ('u1', 'home', '2024-01-01 00:00:01', 1), ('u2', 'home', '2024-01-01 00:00:30', 2),
	  ('u3', 'cart', '2024-01-01 00:00:59', 3), ('u1', 'cart', '2024-01-01 00:01:10', 0), ('u2', 'home', '2024-01-01 00:03:00', 5)`)
	h.tick(5000)
	h.tick(5000)
	for _, v := range []string{"per_page", "per_minute", "big"} {
		fmt.Println(v, h.view(v))
	}
	fmt.Println(len(h.stream("per_page")), len(h.stream("clicks.dead")))
}
