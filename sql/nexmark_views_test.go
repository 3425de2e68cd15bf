package sql_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/internal/testutil/pgtest"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// viewQueries is q4, q5 and q7 (views over views, aggregates over joins, a join with a
// view), to deploy after the streams.
var viewQueries = nexmarkViews("q4") + nexmarkViews("q5") + nexmarkViews("q7")

// TestNexmarkViewsMatchPostgres: Nexmark q4, q5 and q7 as SQL over generated slices, in
// order and out of order, through a replica FSM with random entry and apply-batch
// boundaries: after the last watermark each equals PostgreSQL's batch answer (the
// standard text, windows as arithmetic) over the slice's rows less the late rows of the
// views that judge lateness, restricted to the windows the watermark has closed, and
// benchmarks/nexmark's RefQ4, RefQ5, RefQ7 over the same rows; the joins have freed the
// rows the watermark passed, and no view that reads another view has a late row (their
// watermark is exact: plan/viewinput.go).
func TestNexmarkViewsMatchPostgres(t *testing.T) {
	db := pgtest.New(t)
	conn := db.Connect(t)
	for _, c := range nexmarkCases {
		// Compiled for a cluster of plan format 4 (q5's HOP per window: format 3), of
		// format 5 (HOP panes) and for the newest (q7's join sides in tables of their
		// own: format 6): the same answers.
		for _, pv := range []int{4, 5, plan.Version} {
			t.Run(fmt.Sprintf("%s/format%d", c.name, pv), func(t *testing.T) { runNexmarkViewsCase(t, conn, c, pv) })
		}
	}
}

func runNexmarkViewsCase(t *testing.T, conn *pgx.Conn, c nexmarkCase, planVersion int) {
	g, err := nexmark.New(nexmark.Config{Seed: c.seed, Events: c.events, Rate: 200, OutOfOrderGroup: c.group})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := g.Slice(0, c.events)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(c.seed, 29))
	art, err := sql.Compile(fmt.Sprintf(nexmarkStreams, c.ooo)+viewQueries, sql.Options{PlanVersion: planVersion})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessFor(t, c.parts, art)
	format, panes := 3, false
	if planVersion >= 5 {
		format, panes = 5, true
	}
	if planVersion >= 6 {
		format = 6
	}
	if h.Art.Plan.Version != format {
		t.Fatalf("compiled for format %d: plan version %d, want %d", planVersion, h.Art.Plan.Version, format)
	}
	for _, v := range h.Art.Plan.Views {
		if v.Name == "q5_bids" && v.Window.Panes != panes {
			t.Fatalf("compiled for format %d: q5_bids panes %t, want %t", planVersion, v.Window.Panes, panes)
		}
	}
	h.Apply(randomGroups(r, nexmarkEntries(r, h, evs)))
	for _, s := range []string{"auction.dead", "bid.dead", "q4_final.dead", "q5_bids.dead", "q5_max.dead", "q7_max.dead",
		"q4_final.by_key.dead", "q4.by_key.dead", "q5.by_key.dead", "q5_max.by_key.dead", "q7.by_key.dead", "q7_max.by_key.dead", "q5_bids.by_key.dead"} {
		if d := h.Stream(s); len(d) > 0 {
			t.Fatalf("%s: %d dead letters, the first %q", s, len(d), d[0].Value)
		}
	}
	for _, v := range []string{"q5_max", "q5"} { // views over views: never late
		if n := len(h.Stream(v + plan.SuffixLate)); n > 0 {
			t.Errorf("%s: %d late rows: a view over a view's final rows is never late", v, n)
		}
	}
	late := 0
	drop := func(view string) []nexmark.Event {
		out, n := h.withoutLateOf(h.ViewPlan(view), evs)
		late += n
		return out
	}

	// q4: late rows only in the join.
	onTime := drop("q4_final")
	got := canonRows(h.View("q4"))
	want := canonRows(nexmarkPostgres(t, conn, onTime, `SELECT Q.category, AVG(Q.final)::float8 FROM (
	    SELECT MAX(B.price) AS final, A.category FROM auction A, bid B
	    WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
	    GROUP BY A.id, A.category) Q GROUP BY Q.category`))
	checkNonEmpty(t, "q4", want)
	diffRows(t, "q4 vs PostgreSQL", got, want)
	var ref [][]any
	for _, r := range nexmark.RefQ4(onTime) {
		ref = append(ref, []any{r.Category, r.Avg})
	}
	diffRows(t, "q4 vs nexmark.RefQ4", got, canonRows(ref))
	h.checkFreed(h.ViewPlan("q4_final"), c.wantFreeing)

	// q5: late rows only in the HOP counts; the windows q5_max has closed.
	onTime = drop("q5_bids")
	w5 := h.watermark("q5_max")
	got = canonRows(h.View("q5"))
	want = canonRows(nexmarkPostgres(t, conn, onTime, fmt.Sprintf(`WITH CountBids AS (
	    SELECT auction, count(*) AS num, ws AS starttime, ws + 10000 AS endtime
	    FROM bid, generate_series(date_time - date_time %% 2000 - 8000, date_time - date_time %% 2000, 2000) AS ws
	    GROUP BY auction, ws)
	  SELECT AuctionBids.auction, AuctionBids.num, AuctionBids.starttime, AuctionBids.endtime
	  FROM CountBids AuctionBids JOIN (SELECT max(num) AS maxn, starttime, endtime FROM CountBids GROUP BY starttime, endtime) MaxBids
	    ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime AND AuctionBids.num >= MaxBids.maxn
	  WHERE AuctionBids.endtime < %d`, w5)))
	checkNonEmpty(t, "q5", want)
	diffRows(t, "q5 vs PostgreSQL", got, want)
	ref = nil
	for _, r := range nexmark.RefQ5(onTime) {
		if r.EndTime < w5 {
			ref = append(ref, []any{r.Auction, r.Num, r.StartTime, r.EndTime})
		}
	}
	diffRows(t, "q5 vs nexmark.RefQ5", got, canonRows(ref))
	h.checkFreed(h.ViewPlan("q5"), c.wantFreeing)

	// q7: a bid late for the maximum (its window closed) and one late for the join are
	// judged apart, so PostgreSQL gets each set of on-time bids where it is used.
	forMax, forJoin := drop("q7_max"), drop("q7")
	w7 := h.watermark("q7_max")
	got = canonRows(h.View("q7"))
	want = canonRows(nexmarkPostgresSets(t, conn, map[string][]nexmark.Event{"max": forMax, "join": forJoin}, fmt.Sprintf(`
	  SELECT B.auction, B.price, B.bidder, B.date_time, B.extra
	  FROM join_bid B JOIN (SELECT MAX(price) AS maxprice, date_time - date_time %% 10000 + 10000 AS date_time FROM max_bid GROUP BY 2) B1
	    ON B.price = B1.maxprice
	  WHERE B.date_time >= B1.date_time - 10000 AND B.date_time < B1.date_time AND B1.date_time <= %d`, w7)))
	checkNonEmpty(t, "q7", want)
	diffRows(t, "q7 vs PostgreSQL", got, want)
	if len(forMax) == len(evs) && len(forJoin) == len(evs) {
		ref = nil
		for _, r := range nexmark.RefQ7(evs) {
			if nexmark.WindowStart(r.DateTime, nexmark.Q7WindowMs)+nexmark.Q7WindowMs <= w7 {
				ref = append(ref, []any{r.Auction, r.Price, r.Bidder, r.DateTime, r.Extra})
			}
		}
		diffRows(t, "q7 vs nexmark.RefQ7", got, canonRows(ref))
	} else {
		t.Logf("q7: late bids (%d for the maximum, %d for the join): compared with PostgreSQL only", len(evs)-len(forMax), len(evs)-len(forJoin))
	}
	h.checkFreed(h.ViewPlan("q7"), c.wantFreeing)
	t.Logf("%d events, %d late rows; q5 up to %d, q7 up to %d", len(evs), late, w5, w7)
}

func checkNonEmpty(t *testing.T, name string, want []string) {
	t.Helper()
	if len(want) == 0 {
		t.Errorf("%s: PostgreSQL's answer is empty: the slice tests nothing", name)
	}
}

// withoutLateOf returns the events less those in view v's late stream: a join's (its
// side's byte, then the record as it came) or a windowed view's (the record as it came),
// and how many those were.
func (h *harness) withoutLateOf(v *plan.View, evs []nexmark.Event) ([]nexmark.Event, int) {
	h.T.Helper()
	late := map[string]int{}
	recs := h.Stream(v.Name + plan.SuffixLate)
	for _, rec := range recs {
		stream, val := v.Input.Name, rec.Value
		if v.Pair != nil {
			if len(val) == 0 {
				h.T.Fatalf("%s: empty late record", v.Name)
			}
			if val[0] == 'R' {
				stream = v.Pair.Right.Name
			}
			val = val[1:]
		}
		late[stream+"\x00"+string(rec.Key)+"\x00"+string(val)]++
	}
	var out []nexmark.Event
	for _, e := range evs {
		k := e.Stream() + "\x00" + string(e.Key()) + "\x00" + string(e.Value())
		if late[k] > 0 {
			late[k]--
			continue
		}
		out = append(out, e)
	}
	for k, n := range late {
		if n > 0 {
			h.T.Fatalf("%s: late record %q is no event of the slice", v.Name, k)
		}
	}
	return out, len(recs)
}
