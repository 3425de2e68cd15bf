package sql_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/vmihailenco/msgpack/v5"
)

// The built-in click pipeline (procedures.RegisterClickPipeline, hand-written Go) written
// in SQL gives the same windows and the same late clicks, fed the same clicks in the
// same log entries: its configuration (1-minute windows, 5 s out of order, 10 s allowed
// lateness, 10 s idle) is the SQL's.
const clicksSQL = `
CREATE STREAM clicks (usr text, page text, ts timestamp)
  WITH (key = 'usr', event_time = 'ts', out_of_orderness = '5 seconds', idle_timeout = '10 seconds');
CREATE MATERIALIZED VIEW page_counts WITH (allowed_lateness = '10 seconds') AS
  SELECT window_start, window_end, page, count(*) AS clicks
  FROM TUMBLE(clicks, ts, INTERVAL '1 minute')
  GROUP BY window_start, window_end, page
  EMIT ON WINDOW CLOSE;`

func TestClickPipelineInSQL(t *testing.T) {
	if procedures.DefaultClickPipeline.Window.Milliseconds() != 60_000 || procedures.DefaultClickPipeline.OutOfOrderness.Milliseconds() != 5000 ||
		procedures.DefaultClickPipeline.AllowedLateness.Milliseconds() != 10_000 || procedures.DefaultClickPipeline.IdleTimeout.Milliseconds() != 10_000 {
		t.Fatalf("the built-in pipeline's configuration changed: %+v; update clicksSQL", procedures.DefaultClickPipeline)
	}
	goStreams := procedures.DefaultClickPipeline.Streams()
	for seed := range 4 {
		r := rand.New(rand.NewPCG(uint64(seed), 5))
		parts := 1 + r.IntN(4)
		h := newHarness(t, parts, clicksSQL)
		args, _ := msgpack.Marshal(builtin.StreamDefinition{Name: goStreams.Clicks})
		h.Apply([][]batch.Entry{{{Time: h.Now, Items: []batch.Item{{Kind: batch.KindInvoke, Procedure: builtin.StreamCreate,
			Scope: partition.AllPartitions(parts), Args: args}}}}})
		s := h.Art.Plan.Relations[0]
		var entries []batch.Entry
		now := h.Now
		for i := 0; i < 600; {
			now += int64(r.IntN(2000)) * 1e6
			e := batch.Entry{Time: now}
			for n := 1 + r.IntN(10); n > 0 && i < 600; n-- {
				user, page := fmt.Sprintf("u%d", r.IntN(10)), fmt.Sprintf("p%d", r.IntN(8))
				ts := oracleBase + int64(i)*500 - int64(r.IntN(70_000))
				if r.IntN(10) == 0 {
					ts -= 90_000 // some clicks come very late
				}
				row, err := s.EncodeRow([]any{user, page, ts})
				if err != nil {
					t.Fatal(err)
				}
				e.Items = append(e.Items, h.AppendItem(sql.Append{Stream: "clicks", Key: []byte(user), Value: row, EventTimeMs: ts}))
				click, _ := msgpack.Marshal(&builtin.Click{Page: page, Time: ts})
				e.Items = append(e.Items, h.AppendItem(sql.Append{Stream: goStreams.Clicks, Key: []byte(user), Value: click, EventTimeMs: ts}))
				i++
			}
			entries = append(entries, e)
		}
		for range 4 {
			now += 11e9
			entries = append(entries, batch.Entry{Time: now, Items: []batch.Item{{Kind: batch.KindTick}}})
		}
		h.Apply(randomGroups(r, entries))

		var goWindows, goLate []string
		for _, rec := range h.Stream(goStreams.Counts) {
			var pc builtin.PageCount
			if err := msgpack.Unmarshal(rec.Value, &pc); err != nil {
				t.Fatal(err)
			}
			if pc.Final {
				goWindows = append(goWindows, fmt.Sprintf("%d %d %s %d", pc.Start, pc.End, pc.Page, pc.Count))
			}
		}
		for _, rec := range h.Stream(goStreams.Late) {
			var c builtin.Click
			if err := msgpack.Unmarshal(rec.Value, &c); err != nil {
				t.Fatal(err)
			}
			goLate = append(goLate, fmt.Sprintf("%s %s %d", c.User, c.Page, c.Time))
		}
		var sqlWindows, sqlLate []string
		for _, row := range h.View("page_counts") {
			sqlWindows = append(sqlWindows, fmt.Sprintf("%d %d %s %d", row[0], row[1], row[2], row[3]))
		}
		for _, row := range h.lateRows("page_counts", &s) {
			sqlLate = append(sqlLate, fmt.Sprintf("%s %s %d", row[0], row[1], row[2]))
		}
		for _, l := range [][]string{goWindows, goLate, sqlWindows, sqlLate} {
			slices.Sort(l)
		}
		if len(goWindows) == 0 || len(goLate) == 0 {
			t.Fatalf("seed %d: %d windows and %d late clicks: the test shows nothing", seed, len(goWindows), len(goLate))
		}
		if !slices.Equal(goWindows, sqlWindows) {
			t.Errorf("seed %d (%d partitions): windows differ:\n  go  %v\n  sql %v", seed, parts, goWindows, sqlWindows)
		}
		if !slices.Equal(goLate, sqlLate) {
			t.Errorf("seed %d (%d partitions): late clicks differ:\n  go  %v\n  sql %v", seed, parts, goLate, sqlLate)
		}
	}
}
