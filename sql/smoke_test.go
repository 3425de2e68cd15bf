package sql_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
	"github.com/vmihailenco/msgpack/v5"
)

const clicksScript = `
CREATE STREAM clicks (usr text, page text, ts timestamp, n bigint)
  WITH (key = 'usr', event_time = 'ts', out_of_orderness = '1 second', idle_timeout = '2 seconds');
CREATE MATERIALIZED VIEW per_page AS
  SELECT page, count(*) AS clicks, sum(n) AS total FROM clicks WHERE n > 0 GROUP BY page;
CREATE MATERIALIZED VIEW per_minute AS
  SELECT window_start, page, count(*) AS c, max(n) FROM TUMBLE(clicks, ts, INTERVAL '1 minute')
  GROUP BY window_start, page EMIT ON WINDOW CLOSE;
CREATE MATERIALIZED VIEW big AS SELECT usr, upper(page) AS p, n * 2 AS twice FROM clicks WHERE n >= 2;
`

const clicksRows = `INSERT INTO clicks VALUES ('u1', 'home', '2024-01-01 00:00:01', 1), ('u2', 'home', '2024-01-01 00:00:30', 2),
  ('u3', 'cart', '2024-01-01 00:00:59', 3), ('u1', 'cart', '2024-01-01 00:01:10', 0), ('u2', 'home', '2024-01-01 00:03:00', 5)`

func rowsText(rows [][]any) []string {
	var out []string
	for _, r := range rows {
		out = append(out, strings.TrimSpace(fmt.Sprintln(r...)))
	}
	slices.Sort(out)
	return out
}

// The three kinds of view on a few rows, with the results worked out by hand.
func TestViewExamples(t *testing.T) {
	h := newHarness(t, 4, clicksScript)
	h.Insert(clicksRows)
	h.Tick(5000)
	h.Tick(5000)
	const m0, m1 = 1704067200000, 1704067260000
	want := map[string][]string{
		"per_page": {"cart 1 3", "home 3 8"},
		// The 00:03 window is open: the watermark is 00:03:00 less 1 s.
		"per_minute": rowsText([][]any{{int64(m0), "home", int64(2), int64(2)}, {int64(m0), "cart", int64(1), int64(3)}, {int64(m1), "cart", int64(1), int64(0)}}),
		"big":        {"u2 HOME 10", "u2 HOME 4", "u3 CART 6"},
	}
	for v, w := range want {
		if got := rowsText(h.View(v)); !slices.Equal(got, w) {
			t.Errorf("view %s: got %q, want %q", v, got, w)
		}
	}
	// per_page's changelog: an insert per new page, an update per later row of it.
	var ops []string
	vp := h.ViewPlan("per_page")
	for _, rec := range h.Stream("per_page") {
		ch, err := vp.DecodeChange(rec.Key, rec.Value)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, string(ch.Op)+" "+strings.TrimSpace(fmt.Sprintln(ch.Row...)))
	}
	slices.Sort(ops)
	if w := []string{"I cart 1 3", "I home 1 1", "U home 2 3", "U home 3 8"}; !slices.Equal(ops, w) {
		t.Errorf("per_page changelog: got %q, want %q", ops, w)
	}
}

// A record that does not fit its stream's schema is refused, naming the column and the
// reason: it goes to the dead-letter stream and changes no view.
func TestBadRowsDeadLettered(t *testing.T) {
	h := newHarness(t, 2, clicksScript)
	s := h.Art.Plan.Relations[0]
	good, _ := s.EncodeRow([]any{"u1", "home", int64(1704067201000), int64(1)})
	wrongType := plan.AppendRow(nil, []any{"u1", "home", int64(1704067201000), "one"})
	short := plan.AppendRow(nil, []any{"u1", "home"})
	nullTime := plan.AppendRow(nil, []any{"u1", "home", nil, int64(1)})
	var items []batch.Item
	for _, a := range []sql.Append{
		{Stream: "clicks", Key: []byte("u1"), Value: wrongType},
		{Stream: "clicks", Key: []byte("u1"), Value: short},
		{Stream: "clicks", Key: []byte("u1"), Value: nullTime},
		{Stream: "clicks", Key: []byte("someone-else"), Value: good},
		{Stream: "clicks", Key: []byte("u1"), Value: []byte{0xc1}},
	} {
		items = append(items, h.AppendItem(a))
	}
	h.Apply([][]batch.Entry{{{Time: h.Now + 1e6, Items: items}}})
	var got []string
	for _, rec := range h.Stream("clicks.dead") {
		var dl partition.DeadLetter
		if err := msgpack.Unmarshal(rec.Value, &dl); err != nil {
			t.Fatal(err)
		}
		if dl.Processor == "big.project" { // one of the three processors that read clicks
			got = append(got, dl.Error)
		}
	}
	want := []string{"column n: want an integer", "2 values for 4 columns", "column ts: NULL", "column usr: record key", "not a msgpack array"}
	if len(got) != len(want) {
		t.Fatalf("got %d dead letters of big.project, want %d: %q", len(got), len(want), got)
	}
	for i := range want { // the dead letters of all partitions: match in any order
		if !slices.ContainsFunc(got, func(g string) bool {
			return strings.Contains(g, want[i]) && strings.Contains(g, "bad row for clicks")
		}) {
			t.Errorf("#%d: no dead letter says %q: %q", i, want[i], got)
		}
	}
	for _, v := range []string{"per_page", "big"} {
		if rows := h.View(v); len(rows) != 0 {
			t.Errorf("view %s has rows %v after bad rows only", v, rows)
		}
	}
}
