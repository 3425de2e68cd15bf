package sql_test

import (
	"fmt"
	"testing"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/sql"
)

// BenchmarkViews measures rows per second through a view on a 4-partition replica FSM in
// process: entries of 256 appends, one ApplyBatch each.
func BenchmarkViews(b *testing.B) {
	for _, bc := range []struct{ name, view string }{
		{"project", "SELECT usr, upper(page) AS p, n * 2 AS twice FROM clicks WHERE n >= 2"},
		{"group", "SELECT page, count(*) AS c, sum(n) AS s FROM clicks GROUP BY page"},
		{"tumble", "SELECT window_start, page, count(*) AS c, max(n) AS m FROM TUMBLE(clicks, ts, INTERVAL '1 minute') GROUP BY window_start, page"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := newHarness(b, 4, `CREATE STREAM clicks (usr text, page text, ts timestamp, n bigint)
  WITH (key = 'usr', event_time = 'ts', out_of_orderness = '1 second');
CREATE MATERIALIZED VIEW v AS `+bc.view+";")
			s := h.Art.Plan.Relations[0]
			const perEntry = 256
			b.ResetTimer()
			for i := 0; i < b.N; {
				e := batch.Entry{Time: h.Now + 1e6}
				for ; len(e.Items) < perEntry; i++ {
					user := fmt.Sprintf("u%d", i%97)
					ts := oracleBase + int64(i)*10
					row, _ := s.EncodeRow([]any{user, fmt.Sprintf("p%d", i%13), ts, int64(i % 7)})
					e.Items = append(e.Items, h.AppendItem(sql.Append{Stream: "clicks", Key: []byte(user), Value: row, EventTimeMs: ts}))
				}
				h.Apply([][]batch.Entry{{e}})
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkCompile measures compiling a script (deploy time only): the parser's Wasm
// module is compiled once per process, so the first call costs more.
func BenchmarkCompile(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := sql.Compile(clicksScript, sql.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
