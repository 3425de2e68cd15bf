package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/pgtest"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/procedures/window"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

const sqlEvents = `CREATE STREAM ev (k text, g bigint, v bigint, ts timestamp)
  WITH (key = 'k', event_time = 'ts', out_of_orderness = '300 ms', idle_timeout = '2 seconds');`

const sqlWindows = `CREATE MATERIALIZED VIEW tw AS
  SELECT window_start, window_end, g, count(*) AS c, sum(v) AS s
  FROM TUMBLE(ev, ts, INTERVAL '1 second')
  GROUP BY window_start, window_end, g EMIT ON WINDOW CLOSE;`

const sqlBase = int64(1_704_067_200_000) // 2024-01-01 UTC, ms

// sqlRow is the i-th row the load inserts: event times 20 ms apart, some up to 1.5 s
// behind (late past the 300 ms of out-of-orderness when the stream is ahead).
func sqlRow(i int) string {
	ts := sqlBase + int64(i)*20 - int64(i%11)*150
	return fmt.Sprintf("INSERT INTO ev VALUES ('k%d', %d, %d, '%s')", i%5, i%3, i,
		time.UnixMilli(ts).UTC().Format("2006-01-02 15:04:05.000"))
}

// TestSQLViewThroughLeaderKills (issue 23, Show): a stream and a windowed view deployed
// by SQL to a 3-node cluster, rows inserted under load through the exactly-once session
// while the leader is killed twice (the first victim restarted in between); after the
// last watermark the view's contents equal PostgreSQL's batch answer over the same on-time
// rows (the stream's rows less the view's late stream), no acknowledged row is missing or
// doubled, and the restarted nodes replay to equal hashes. With snapshots on, a restarted
// node restores a snapshot carrying the SQL modules and their streams.
func TestSQLViewThroughLeaderKills(t *testing.T) {
	bothSnapshotModes(t, testSQLViewThroughLeaderKills)
}

func testSQLViewThroughLeaderKills(t *testing.T, snapshots bool) {
	db := pgtest.New(t)
	conn := db.Connect(t)
	c := startCluster(t, clusterOptions{nodes: 3, snapshots: snapshots})
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	for _, s := range []string{sqlEvents, sqlWindows} {
		if _, err := cl.SQL().Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}

	var next, acked atomic.Int64
	var mu sync.Mutex
	ackedRows := map[int64]bool{}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 3 {
		wcl := c.dial(ctx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				i := next.Add(1) - 1
				actx, acancel := context.WithTimeout(ctx, 20*time.Second)
				_, err := wcl.SQL().Exec(actx, sqlRow(int(i)))
				acancel()
				if err == nil {
					mu.Lock()
					ackedRows[i] = true
					mu.Unlock()
					acked.Add(1)
				}
			}
		}()
	}
	waitAcked := func(n int64) {
		testutil.WaitFor(t, 60*time.Second, func() error {
			if acked.Load() < n {
				return fmt.Errorf("%d rows acknowledged", acked.Load())
			}
			return nil
		})
	}
	killLeader := func() int {
		old := c.leader()
		victim := slices.Index(c.Nodes, old)
		c.kill(victim)
		if c.waitLeader() == old {
			t.Fatal("the killed leader still leads")
		}
		return victim
	}
	waitAcked(100)
	first := killLeader()
	waitAcked(acked.Load() + 100)
	c.restart(first)
	waitAcked(acked.Load() + 50)
	second := killLeader()
	waitAcked(acked.Load() + 100)
	stop.Store(true)
	wg.Wait()
	c.restart(second)

	// After the idle timeout every partition is idle and the watermark at its highest.
	n := c.waitLeader()
	var wm int64
	testutil.WaitFor(t, 60*time.Second, func() error {
		w := viewWatermark(t, n, "tw")
		if w != wm || w == math.MaxInt64 {
			wm = w
			return fmt.Errorf("watermark still moving: %d", w)
		}
		return nil
	})
	waitConvergedTicking(t, c)

	ev := sqlSchema(t, n, "ev")
	var all [][]any
	seen := map[int64]bool{}
	for _, p := range n.fsm.Engine().Partitions() {
		recs, _, err := p.ReadStream("ev", 0, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			row, err := ev.DecodeRow(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			if v := row[2].(int64); seen[v] {
				t.Fatalf("row %d appended twice", v)
			} else {
				seen[v] = true
			}
			all = append(all, row)
		}
	}
	for i := range ackedRows {
		if !seen[i] {
			t.Fatalf("acknowledged row %d is not in the stream", i)
		}
	}
	late := map[int64]bool{}
	for _, p := range n.fsm.Engine().Partitions() {
		recs, _, err := p.ReadStream("tw"+plan.SuffixLate, 0, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			row, err := ev.DecodeRow(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			late[row[2].(int64)] = true
		}
	}
	if len(late) == 0 {
		t.Error("no row was late: the run does not exercise lateness")
	}
	pgExec(t, conn, "CREATE TABLE ev (k text, g bigint, v bigint, ts bigint)")
	var onTime [][]any
	for _, r := range all {
		if !late[r[2].(int64)] {
			onTime = append(onTime, r)
		}
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"ev"}, []string{"k", "g", "v", "ts"}, pgx.CopyFromRows(onTime)); err != nil {
		t.Fatal(err)
	}
	want := pgCanon(t, conn, fmt.Sprintf(`SELECT * FROM (SELECT ts - ts %% 1000 AS ws, ts - ts %% 1000 + 1000 AS we, g, count(*), sum(v)::bigint
	  FROM ev GROUP BY 1, 2, 3) q WHERE we <= %d`, wm))
	rows, err := cl.SQL().Query(ctx, "SELECT window_start, window_end, g, c, s FROM tw")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows.Rows {
		got = append(got, fmt.Sprint(r[0].(time.Time).UnixMilli(), r[1].(time.Time).UnixMilli(), r[2], r[3], r[4]))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("view tw: %d rows, PostgreSQL %d\n got %v\nwant %v", len(got), len(want), got, want)
	}
	t.Logf("%d rows (%d acknowledged, %d late), %d windows", len(all), len(ackedRows), len(late), len(got))
}

// TestSQLBadInputCluster: bad SQL is refused with a typed error at its line and column,
// and nothing changes: the deployment and the hashes stay as they were.
func TestSQLBadInputCluster(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3, patientRaft: true})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	wcl := c.dialAs(ctx, cl, "other", client.RoleWriter)
	for _, s := range []string{sqlEvents, sqlWindows} {
		if _, err := cl.SQL().Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	same := c.recordUnchanged(ctx, cl)
	for i, tc := range []struct {
		cl        *client.Client
		sql       string
		want      error
		line, col int
		text      string
	}{
		{cl, "CREATE STREAM s (k text) WITH (key = 'k');\nCREATE MATERIALIZED VIEW v AS SELEC k FROM s;", client.ErrBadArguments, 2, 31, "syntax"},
		{cl, "CREATE MATERIALIZED VIEW v AS\n  SELECT nosuch FROM ev;", client.ErrBadArguments, 2, 10, "nosuch"},
		{cl, "CREATE MATERIALIZED VIEW v AS SELECT k FROM ev WHERE k > 1;", client.ErrBadArguments, 1, 0, "type"},
		{cl, "CREATE MATERIALIZED VIEW v AS SELECT k FROM ev UNION SELECT k FROM ev;", client.ErrBadArguments, 1, 0, "unsupported"},
		{cl, "INSERT INTO ev VALUES ('a', 'x', 1, '2024-01-01')", client.ErrBadArguments, 1, 29, ""},
		{cl, "DROP STREAM ev", client.ErrBadArguments, 0, 0, "view tw reads it"},
		{cl, "SELECT * FROM nosuch", client.ErrBadArguments, 1, 15, "nosuch"},
		{wcl, "CREATE STREAM s (k text) WITH (key = 'k');", client.ErrPermissionDenied, 0, 0, "admin"},
		{wcl, "DROP MATERIALIZED VIEW tw", client.ErrPermissionDenied, 0, 0, "admin"},
	} {
		_, err := tc.cl.SQL().Exec(ctx, tc.sql)
		if !errors.Is(err, tc.want) || !strings.Contains(strings.ToLower(err.Error()), tc.text) {
			t.Errorf("#%d %q: got %v, want %v saying %q", i, tc.sql, err, tc.want, tc.text)
			continue
		}
		var se *client.SQLError
		if tc.line != 0 && (!errors.As(err, &se) || se.Line != tc.line || (tc.col != 0 && se.Column != tc.col)) {
			t.Errorf("#%d %q: got %v (%+v), want it at %d:%d", i, tc.sql, err, se, tc.line, tc.col)
		}
	}
	// The replicas refuse, too, what a leader's stale catalogue would let through: a
	// removal of the stream under the view, sent as a module command.
	if _, err := cl.Procedures().RemoveModule(ctx, "ev"); !errors.Is(err, client.ErrBadArguments) || !strings.Contains(err.Error(), "view tw") {
		t.Errorf("remove module ev under tw: got %v", err)
	}
	same.check(ctx)
	// The surfaces: SHOW, EXPLAIN, then DROP in order.
	rows, err := cl.SQL().Query(ctx, "SHOW VIEWS")
	if err != nil || len(rows.Rows) != 1 || rows.Rows[0][0] != "tw" {
		t.Fatalf("SHOW VIEWS: %+v %v", rows, err)
	}
	rows, err = cl.SQL().Query(ctx, "EXPLAIN tw", client.WithReadAny())
	if err != nil || len(rows.Rows) == 0 || !strings.Contains(fmt.Sprint(rows.Rows), "tw.window") {
		t.Fatalf("EXPLAIN tw: %+v %v", rows, err)
	}
	if _, err := cl.SQL().Exec(ctx, "DROP MATERIALIZED VIEW tw"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.SQL().Exec(ctx, "DROP STREAM ev"); err != nil {
		t.Fatal(err)
	}
	if rows, err := cl.SQL().Query(ctx, "SHOW STREAMS", client.WithMaxLag(5*time.Second)); err != nil || len(rows.Rows) != 0 {
		t.Fatalf("SHOW STREAMS after the drops: %+v %v", rows, err)
	}
}

func viewWatermark(t *testing.T, n *Node, view string) int64 {
	w := int64(math.MaxInt64)
	for _, p := range n.fsm.Engine().Partitions() {
		st, err := window.ReadOperator(p, view+plan.SuffixOperator)
		if err != nil {
			t.Fatal(err)
		}
		w = min(w, st.Watermark)
	}
	return w
}

func sqlSchema(t *testing.T, n *Node, name string) *plan.Schema {
	for _, m := range n.fsm.SQLModules() {
		for _, s := range m.Plan.Schemas() {
			if s.Name == name {
				return &s
			}
		}
	}
	t.Fatalf("no schema %s", name)
	return nil
}

func pgExec(t *testing.T, conn *pgx.Conn, q string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func pgCanon(t *testing.T, conn *pgx.Conn, q string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(vals...))
	}
	slices.Sort(out)
	return out
}

// clicksSQL is the built-in click pipeline (procedures.DefaultClickPipeline) in SQL.
const clicksSQL = `CREATE STREAM clicks (usr text, page text, ts timestamp)
  WITH (key = 'usr', event_time = 'ts', out_of_orderness = '5 seconds', idle_timeout = '10 seconds');
CREATE MATERIALIZED VIEW page_counts WITH (allowed_lateness = '10 seconds') AS
  SELECT window_start, window_end, page, count(*) AS clicks
  FROM TUMBLE(clicks, ts, INTERVAL '1 minute')
  GROUP BY window_start, window_end, page
  EMIT ON WINDOW CLOSE;`

// TestClickPipelineInSQLCluster (issue 23, Show): the built-in click pipeline written in
// SQL and deployed through the log on a 3-node cluster gives the Go pipeline's final
// windows and late clicks, fed the same clicks (each click appended to both inputs in
// turn, so that each pipeline sees the same records in the same order per partition).
// The windows close when the partitions without the closing click go idle (10 s).
func TestClickPipelineInSQLCluster(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3, patientRaft: true})
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	goStreams := procedures.DefaultClickPipeline.Streams()
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: goStreams.Clicks}); err != nil {
		t.Fatal(err)
	}
	stmts, _ := sql.SplitStatements(clicksSQL)
	for _, s := range stmts { // one module each, as lockstep sql -f deploys them
		if _, err := cl.SQL().Exec(ctx, s.Text); err != nil {
			t.Fatalf("%s: %v", s.Text, err)
		}
	}
	r := rand.New(rand.NewPCG(23, 5))
	appendBoth := func(user, page string, ts int64) {
		t.Helper()
		if _, err := cl.SQL().Exec(ctx, fmt.Sprintf("INSERT INTO clicks VALUES ('%s', '%s', '%s')", user, page,
			time.UnixMilli(ts).UTC().Format("2006-01-02 15:04:05.000"))); err != nil {
			t.Fatal(err)
		}
		click, _ := msgpack.Marshal(&builtin.Click{Page: page, Time: ts})
		if _, err := cl.Append(ctx, goStreams.Clicks, []byte(user), click, client.WithEventTime(time.UnixMilli(ts))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 150 {
		ts := sqlBase + int64(i)*2000 - int64(r.IntN(30_000))
		if i > 60 && r.IntN(8) == 0 {
			ts -= 200_000 // some clicks come minutes late
		}
		appendBoth(fmt.Sprintf("u%d", r.IntN(6)), fmt.Sprintf("p%d", r.IntN(4)), ts)
	}
	appendBoth("u0", closePage, sqlBase+3_600_000) // moves every watermark past the other windows
	n := c.waitLeader()
	read := func(stream string) []partition.Record {
		var out []partition.Record
		for _, p := range n.fsm.Engine().Partitions() {
			recs, _, err := p.ReadStream(stream, 0, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, recs...)
		}
		return out
	}
	s := sqlSchema(t, n, "clicks")
	outputs := func() (goWindows, goLate, sqlWindows, sqlLate []string) {
		for _, rec := range read(goStreams.Counts) {
			var pc builtin.PageCount
			if err := msgpack.Unmarshal(rec.Value, &pc); err != nil {
				t.Fatal(err)
			}
			if pc.Final {
				goWindows = append(goWindows, fmt.Sprintf("%d %d %s %d", pc.Start, pc.End, pc.Page, pc.Count))
			}
		}
		for _, rec := range read(goStreams.Late) {
			var c builtin.Click
			if err := msgpack.Unmarshal(rec.Value, &c); err != nil {
				t.Fatal(err)
			}
			goLate = append(goLate, fmt.Sprintf("%s %d", c.Page, c.Time)) // keyed by page here: no user
		}
		rows, err := cl.SQL().Query(ctx, "SELECT window_start, window_end, page, clicks FROM page_counts")
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows.Rows {
			sqlWindows = append(sqlWindows, fmt.Sprintf("%d %d %s %d", row[0].(time.Time).UnixMilli(), row[1].(time.Time).UnixMilli(), row[2], row[3]))
		}
		for _, rec := range read("page_counts" + plan.SuffixLate) {
			row, err := s.DecodeRow(rec.Value)
			if err != nil {
				t.Fatal(err)
			}
			sqlLate = append(sqlLate, fmt.Sprintf("%s %d", row[1], row[2]))
		}
		for _, l := range [][]string{goWindows, goLate, sqlWindows, sqlLate} {
			slices.Sort(l)
		}
		return
	}
	var goWindows, goLate, sqlWindows, sqlLate []string
	testutil.WaitFor(t, 60*time.Second, func() error {
		goWindows, goLate, sqlWindows, sqlLate = outputs()
		if len(goWindows) < 5 { // the windows close once the partitions without the closing click go idle
			return fmt.Errorf("%d final windows so far", len(goWindows))
		}
		if !slices.Equal(goWindows, sqlWindows) {
			return fmt.Errorf("windows differ:\n  go  %v\n  sql %v", goWindows, sqlWindows)
		}
		return nil
	})
	// Late clicks equal too (page and event time: the Go pipeline's late records carry no
	// user). How many are late depends on how the appends fell into entries.
	if !slices.Equal(goLate, sqlLate) {
		t.Fatalf("late clicks differ:\n  go  %v\n  sql %v", goLate, sqlLate)
	}
	t.Logf("%d windows, %d late clicks", len(goWindows), len(goLate))
}
