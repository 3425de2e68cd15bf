package sql_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/testutil/pgtest"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// nexmarkStreams declares the Nexmark streams over benchmarks/nexmark's record layout;
// %s is the out-of-orderness. The text is benchmarks/nexmark's, which the benchmark
// (lockstep bench nexmark --engine sql) deploys too.
const nexmarkStreams = nexmark.SQLStreams

// nexmarkQuery is one Nexmark query: its views as Lockstep's SQL (the standard text,
// adapted in syntax only: docs/sql.md, "Nexmark"; for the Nexmark queries
// benchmarks/nexmark.SQLQueries' text), and PostgreSQL's batch text over tables person,
// auction and bid (times as bigint Unix ms, windows as arithmetic).
type nexmarkQuery struct {
	name, views, pg string
	// ref is benchmarks/nexmark's batch reference as rows, nil where its shape differs.
	ref func([]nexmark.Event) [][]any
}

var nexmarkQueries = []nexmarkQuery{
	{name: "q0",
		views: nexmarkViews("q0"),
		pg:    `SELECT auction, bidder, price, date_time, extra FROM bid`,
		ref: func(evs []nexmark.Event) (out [][]any) {
			for _, r := range nexmark.RefQ0(evs) {
				out = append(out, []any{r.Auction, r.Bidder, r.Price, r.DateTime, r.Extra})
			}
			return out
		}},
	{name: "q1",
		views: nexmarkViews("q1"),
		pg:    `SELECT auction, bidder, 0.908::float8 * price, date_time, extra FROM bid`,
		ref: func(evs []nexmark.Event) (out [][]any) {
			for _, r := range nexmark.RefQ1(evs) {
				out = append(out, []any{r.Auction, r.Bidder, r.Price, r.DateTime, r.Extra})
			}
			return out
		}},
	{name: "q2",
		views: nexmarkViews("q2"),
		pg:    `SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0`,
		ref: func(evs []nexmark.Event) (out [][]any) {
			for _, r := range nexmark.RefQ2(evs) {
				out = append(out, []any{r.Auction, r.Price})
			}
			return out
		}},
	{name: "q3",
		views: nexmarkViews("q3"),
		pg: `SELECT P.name, P.city, P.state, A.id FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
  WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')`,
		ref: func(evs []nexmark.Event) (out [][]any) {
			for _, r := range nexmark.RefQ3(evs) {
				out = append(out, []any{r.Name, r.City, r.State, r.ID})
			}
			return out
		}},
	{name: "q8",
		views: nexmarkViews("q8"),
		pg: `SELECT P.id, P.name, P.starttime
  FROM (SELECT id, name, date_time - date_time % 10000 AS starttime, date_time - date_time % 10000 + 10000 AS endtime
        FROM person GROUP BY 1, 2, 3, 4) P
  JOIN (SELECT seller, date_time - date_time % 10000 AS starttime, date_time - date_time % 10000 + 10000 AS endtime
        FROM auction GROUP BY 1, 2, 3) A
    ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime`,
		ref: func(evs []nexmark.Event) (out [][]any) {
			for _, r := range nexmark.RefQ8(evs) {
				out = append(out, []any{r.ID, r.Name, r.StartTime})
			}
			return out
		}},
	// Not Nexmark: interval joins, each bid with the auctions it may follow closely.
	{name: "fresh",
		views: `CREATE MATERIALIZED VIEW fresh AS SELECT A.id, A.seller, B.bidder, B.price, B.date_time FROM auction A JOIN bid B
    ON A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.date_time + INTERVAL '2 seconds';`,
		pg: `SELECT A.id, A.seller, B.bidder, B.price, B.date_time FROM auction A JOIN bid B
    ON A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.date_time + 2000`},
	// Bid on the left, strict and open bounds, written both ways round.
	{name: "near",
		views: `CREATE MATERIALIZED VIEW near AS SELECT B.price, A.reserve, A.date_time - B.date_time AS gap FROM bid B JOIN auction A
    ON B.auction = A.id AND B.date_time > A.date_time - INTERVAL '1 second' AND A.date_time + INTERVAL '500 milliseconds' >= B.date_time;`,
		pg: `SELECT B.price, A.reserve, A.date_time - B.date_time FROM bid B JOIN auction A
    ON B.auction = A.id AND B.date_time > A.date_time - 1000 AND A.date_time + 500 >= B.date_time`},
}

// nexmarkViews is Nexmark query q's views as the benchmark deploys them.
func nexmarkViews(q string) string {
	text, ok := nexmark.SQLText(q)
	if !ok {
		panic("no SQL text of " + q)
	}
	return text
}

// nexmarkScript is the streams and every query's view.
func nexmarkScript(ooo string) string {
	var b strings.Builder
	fmt.Fprintf(&b, nexmarkStreams, ooo)
	for _, q := range nexmarkQueries {
		fmt.Fprintln(&b, q.views)
	}
	return b.String()
}

// nexmarkCase is one generated slice's run.
type nexmarkCase struct {
	name        string
	seed        uint64
	events      int64
	group       int    // the generator's out-of-order group (1: in order)
	ooo         string // the streams' out-of-orderness
	parts       int
	wantLate    bool // the slice must make some join rows late
	wantFreeing bool // the bounded joins must have freed kept rows
}

var nexmarkCases = []nexmarkCase{
	{name: "on-time", seed: 1, events: 6000, group: 1, ooo: "0 seconds", parts: 3, wantFreeing: true},
	{name: "disorder", seed: 2, events: 6000, group: 400, ooo: "500 milliseconds", parts: 4, wantLate: true, wantFreeing: true},
	{name: "disorder-covered", seed: 3, events: 4000, group: 100, ooo: "1 second", parts: 2, wantFreeing: true},
}

// TestNexmarkMatchesPostgres: Nexmark q0, q1, q2, q3 and q8 as SQL (and two interval
// joins) over generated slices, in order and out of order, through a replica FSM:
// after the last watermark each view equals PostgreSQL's batch answer over the slice's
// rows less those of the view's late stream, and benchmarks/nexmark's reference over
// the same rows; a time-bounded join has freed the rows the watermark has passed.
func TestNexmarkMatchesPostgres(t *testing.T) {
	db := pgtest.New(t)
	conn := db.Connect(t)
	for _, c := range nexmarkCases {
		t.Run(c.name, func(t *testing.T) { runNexmarkCase(t, conn, c) })
	}
}

func runNexmarkCase(t *testing.T, conn *pgx.Conn, c nexmarkCase) {
	g, err := nexmark.New(nexmark.Config{Seed: c.seed, Events: c.events, Rate: 200, OutOfOrderGroup: c.group})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := g.Slice(0, c.events)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(c.seed, 23))
	h := newHarness(t, c.parts, nexmarkScript(c.ooo))
	h.Apply(randomGroups(r, nexmarkEntries(r, h, evs)))
	for _, s := range []string{"person.dead", "auction.dead", "bid.dead"} {
		if d := h.Stream(s); len(d) > 0 {
			t.Fatalf("%s: %d dead letters, the first %q", s, len(d), d[0].Value)
		}
	}
	late := 0
	for _, q := range nexmarkQueries {
		v := h.ViewPlan(q.name)
		onTime, n := h.withoutLate(v, evs)
		late += n
		if n > 0 && (v.Pair == nil || !v.Pair.HasLo && !v.Pair.HasHi) {
			t.Errorf("%s: %d late rows, but it never frees a row", q.name, n)
		}
		got := canonRows(h.View(q.name))
		want := canonRows(nexmarkPostgres(t, conn, onTime, q.pg))
		if len(want) == 0 {
			t.Errorf("%s: PostgreSQL's answer is empty: the slice tests nothing", q.name)
		}
		diffRows(t, q.name+" vs PostgreSQL", got, want)
		if q.ref != nil {
			diffRows(t, q.name+" vs nexmark.Ref", got, canonRows(q.ref(onTime)))
		}
		if v.Pair != nil && (v.Pair.HasLo || v.Pair.HasHi) {
			h.checkFreed(v, c.wantFreeing)
		}
	}
	if c.wantLate && late == 0 {
		t.Errorf("no join row was late: the case does not test lateness")
	}
	t.Logf("%d events, %d late join rows", len(evs), late)
}

// nexmarkEntries is the log of a slice: entries of 1..40 events, batch time moving
// 0..200 ms, then ticks past the idle timeout, so that the watermark is at its highest.
func nexmarkEntries(r *rand.Rand, h *harness, evs []nexmark.Event) []batch.Entry {
	var entries []batch.Entry
	now := h.Now
	for i := 0; i < len(evs); {
		now += int64(r.IntN(200)) * 1e6
		e := batch.Entry{Time: now}
		for n := 1 + r.IntN(40); n > 0 && i < len(evs); n-- {
			ev := &evs[i]
			e.Items = append(e.Items, h.AppendItem(sql.Append{Stream: ev.Stream(), Key: ev.Key(), Value: ev.Value(), EventTimeMs: ev.Time()}))
			i++
		}
		entries = append(entries, e)
	}
	// Enough ticks for the watermark to cross a chain of views (each view over a view
	// takes it a phase or two later).
	for range 8 {
		now += 5e9
		entries = append(entries, batch.Entry{Time: now, Items: []batch.Item{{Kind: batch.KindTick}}})
	}
	return entries
}

// withoutLate returns the events less those in view v's late stream (a join's late
// record is its side's byte, then the record as it came), and how many those were.
func (h *harness) withoutLate(v *plan.View, evs []nexmark.Event) ([]nexmark.Event, int) {
	h.T.Helper()
	late := map[string]int{}
	var recs []partition.Record
	if v.Pair != nil { // only joins and windowed views have a late stream
		recs = h.Stream(v.Name + plan.SuffixLate)
	}
	for _, rec := range recs {
		if v.Pair == nil || len(rec.Value) == 0 {
			h.T.Fatalf("%s: late record %q of a view that is not a join", v.Name, rec.Value)
		}
		stream := v.Input.Name
		if rec.Value[0] == 'R' {
			stream = v.Pair.Right.Name
		}
		late[stream+"\x00"+string(rec.Key)+"\x00"+string(rec.Value[1:])]++
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

// nexmarkPostgres loads events into a fresh schema and runs q there.
func nexmarkPostgres(t *testing.T, conn *pgx.Conn, evs []nexmark.Event, q string) [][]any {
	return nexmarkPostgresSets(t, conn, map[string][]nexmark.Event{"": evs}, q)
}

// nexmarkPostgresSets loads each set of events into tables person, auction and bid
// whose names have the set's prefix (prefix_bid, …; "" for none), in a fresh schema, and
// runs q there.
func nexmarkPostgresSets(t *testing.T, conn *pgx.Conn, sets map[string][]nexmark.Event, q string) [][]any {
	ctx := context.Background()
	schema := fmt.Sprintf("nx%d", rand.Uint32())
	pgExec(t, conn, "CREATE SCHEMA "+schema)
	defer func() { _, _ = conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE") }()
	pgExec(t, conn, "SET search_path TO "+schema)
	for prefix, evs := range sets {
		if prefix != "" {
			prefix += "_"
		}
		loadNexmark(t, conn, prefix, evs)
	}
	return pgRows(t, conn, q)
}

// loadNexmark loads events into tables prefix+person, prefix+auction, prefix+bid.
func loadNexmark(t *testing.T, conn *pgx.Conn, prefix string, evs []nexmark.Event) {
	ctx := context.Background()
	pgExec(t, conn, `CREATE TABLE `+prefix+`person (id bigint, name text, email_address text, credit_card text, city text, state text, date_time bigint, extra text)`)
	pgExec(t, conn, `CREATE TABLE `+prefix+`auction (id bigint, item_name text, description text, initial_bid bigint, reserve bigint, date_time bigint, expires bigint, seller bigint, category bigint, extra text)`)
	pgExec(t, conn, `CREATE TABLE `+prefix+`bid (auction bigint, bidder bigint, price bigint, channel text, url text, date_time bigint, extra text)`)
	rows := map[string][][]any{}
	for _, e := range evs {
		switch {
		case e.Person != nil:
			p := e.Person
			rows["person"] = append(rows["person"], []any{p.ID, p.Name, p.EmailAddress, p.CreditCard, p.City, p.State, p.DateTime, p.Extra})
		case e.Auction != nil:
			a := e.Auction
			rows["auction"] = append(rows["auction"], []any{a.ID, a.ItemName, a.Description, a.InitialBid, a.Reserve, a.DateTime, a.Expires, a.Seller, a.Category, a.Extra})
		default:
			b := e.Bid
			rows["bid"] = append(rows["bid"], []any{b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime, b.Extra})
		}
	}
	cols := map[string][]string{
		"person":  {"id", "name", "email_address", "credit_card", "city", "state", "date_time", "extra"},
		"auction": {"id", "item_name", "description", "initial_bid", "reserve", "date_time", "expires", "seller", "category", "extra"},
		"bid":     {"auction", "bidder", "price", "channel", "url", "date_time", "extra"},
	}
	for tbl, rs := range rows {
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{prefix + tbl}, cols[tbl], pgx.CopyFromRows(rs)); err != nil {
			t.Fatal(err)
		}
	}
}

// diffRows fails the test, showing a few differences, when got and want differ.
func diffRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	shown := 0
	for _, w := range want {
		if !slices.Contains(got, w) && shown < 5 {
			t.Logf("%s: missing %s", what, w)
			shown++
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) && shown < 10 {
			t.Logf("%s: extra %s", what, g)
			shown++
		}
	}
	t.Errorf("%s: %d rows, want %d", what, len(got), len(want))
}

// checkFreed checks a time-bounded join's kept rows after the last watermark W: every
// row still indexed by expiry expires at or after W (the rest were freed), and, with
// wantFreed, some were freed.
func (h *harness) checkFreed(v *plan.View, wantFreed bool) {
	h.T.Helper()
	byKey := v.Name + plan.SuffixByKey
	kept, indexed, fed := 0, 0, len(h.Stream(byKey))
	for _, p := range h.F.Engine().Partitions() {
		wm := int64(partition.NoWatermark)
		p.Scan(partition.SysWatermarks, partition.ScanOptions{}, func(k, val []byte) bool {
			if bytes.Equal(k, append([]byte{'i'}, byKey...)) {
				wm = int64(binary.BigEndian.Uint64(val)) // partition.combined: the mark first
			}
			return true
		})
		if wm == partition.NoWatermark {
			h.T.Fatalf("%s: no exchange watermark", v.Name)
		}
		for _, tbl := range []string{v.Name + plan.SuffixPairs, v.Name + plan.SuffixRightPairs} {
			p.Scan(tbl, partition.ScanOptions{}, func(_, _ []byte) bool { kept++; return true })
		}
		p.Scan(v.Name+plan.SuffixExpiry, partition.ScanOptions{}, func(k, _ []byte) bool {
			indexed++
			if exp := decodeTime(k); exp < wm {
				h.T.Errorf("%s: a kept row expired at %d, before the watermark %d", v.Name, exp, wm)
				return false
			}
			return true
		})
	}
	if wantFreed && kept >= fed {
		h.T.Errorf("%s: %d rows kept of %d: none freed", v.Name, kept, fed)
	}
	if v.Pair.HasLo && v.Pair.HasHi && indexed != kept {
		h.T.Errorf("%s: %d kept rows, %d indexed by expiry", v.Name, kept, indexed)
	}
	h.T.Logf("%s: %d of %d rows kept", v.Name, kept, fed)
}

// decodeTime reads the order-preserving time encoding of a kept row's expiry key
// (big-endian, sign bit flipped).
func decodeTime(b []byte) int64 {
	var u uint64
	for _, c := range b[:8] {
		u = u<<8 | uint64(c)
	}
	return int64(u ^ (1 << 63))
}

// TestJoinFreesUnderLoad: a time-bounded join frees kept rows while its input keeps
// coming (every entry brings rows to every partition, so the joiner is never caught up
// at its tick): the horizon is then the last handled row's stamp. Without that, it would
// keep every row until the input paused.
func TestJoinFreesUnderLoad(t *testing.T) {
	g, err := nexmark.New(nexmark.Config{Seed: 4, Events: 8000, Rate: 200})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := g.Slice(0, 8000)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, 2, fmt.Sprintf(nexmarkStreams, "0 seconds")+nexmarkQueries[5].views)
	h.applyEvents(evs, 200)
	kept, fed := 0, len(h.Stream("fresh.by_key"))
	for _, p := range h.F.Engine().Partitions() {
		for _, tbl := range []string{"fresh" + plan.SuffixPairs, "fresh" + plan.SuffixRightPairs} {
			p.Scan(tbl, partition.ScanOptions{}, func(_, _ []byte) bool { kept++; return true })
		}
	}
	if kept*4 > fed {
		t.Errorf("%d of %d rows kept under load, want at most a quarter", kept, fed)
	}
}

// TestJoinSideTables: compiled for plan format 6, a join (fresh: auctions with the bids
// of their first 2 s) keeps its right side's rows in fresh.rpairs and the left's in
// fresh.pairs; compiled for format 5, both sides in fresh.pairs. The same input keeps
// the same rows either way, and the view's rows are the same.
func TestJoinSideTables(t *testing.T) {
	g, err := nexmark.New(nexmark.Config{Seed: 6, Events: 6000, Rate: 200})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := g.Slice(0, 6000)
	if err != nil {
		t.Fatal(err)
	}
	run := func(planVersion int) (pairs, rpairs int, rows []string) {
		art, err := sql.Compile(fmt.Sprintf(nexmarkStreams, "0 seconds")+nexmarkQueries[5].views, sql.Options{PlanVersion: planVersion})
		if err != nil {
			t.Fatal(err)
		}
		h := newHarnessFor(t, 2, art)
		h.applyEvents(evs, 200)
		for _, p := range h.F.Engine().Partitions() {
			p.Scan("fresh"+plan.SuffixPairs, partition.ScanOptions{}, func(_, _ []byte) bool { pairs++; return true })
			p.Scan("fresh"+plan.SuffixRightPairs, partition.ScanOptions{}, func(_, _ []byte) bool { rpairs++; return true })
		}
		return pairs, rpairs, canonRows(h.View("fresh"))
	}
	p6, r6, rows6 := run(6)
	p5, r5, rows5 := run(5)
	if r6 == 0 || r5 != 0 || p5 != p6+r6 {
		t.Fatalf("format 6: %d rows in fresh.pairs, %d in fresh.rpairs; format 5: %d and %d (want the right side's apart in 6 only, the same rows)", p6, r6, p5, r5)
	}
	if len(rows6) == 0 {
		t.Fatal("fresh has no rows: the slice tests nothing")
	}
	diffRows(t, "fresh format 6 vs 5", rows6, rows5)
}

// applyEvents appends evs in entries of per events, one ApplyBatch, the entry times 1 ms
// apart per event from the harness's clock.
func (h *harness) applyEvents(evs []nexmark.Event, per int) {
	var entries []batch.Entry
	for i := 0; i < len(evs); i += per {
		e := batch.Entry{Time: h.Now + int64(i+1)*1e6}
		for j := i; j < min(i+per, len(evs)); j++ {
			ev := &evs[j]
			e.Items = append(e.Items, h.AppendItem(sql.Append{Stream: ev.Stream(), Key: ev.Key(), Value: ev.Value(), EventTimeMs: ev.Time()}))
		}
		entries = append(entries, e)
	}
	h.Apply([][]batch.Entry{entries})
}
