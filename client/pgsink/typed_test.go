package pgsink_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/client/pgsink"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/pgtest"
	"github.com/lockstepdb/lockstep/internal/testutil/sqltest"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// typedScript defines stream s with a column of every type.
const typedScript = `CREATE STREAM s (id bigint, name text, score double, ok boolean, at timestamp, took interval, blob bytea)
  WITH (key = 'id', event_time = 'at')`

// compileSchema compiles script and returns the schema of relation name.
func compileSchema(t testing.TB, script, name string) plan.Schema {
	t.Helper()
	art, err := sql.Compile(script, sql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range art.Schemas() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no relation %s", name)
	return plan.Schema{}
}

// typedRow is the row of record seq on key id (NULL name every 7th).
func typedRow(id, seq int64) []any {
	var name any = fmt.Sprintf("n%d", seq)
	if seq%7 == 0 {
		name = nil
	}
	return []any{id, name, float64(seq) / 4, seq%2 == 0, int64(1_700_000_000_000 + seq), seq * 1000, []byte{byte(seq), byte(seq >> 8)}}
}

// appendTyped appends records seq from..from+n-1 of s, record seq on key seq%keys.
func appendTyped(t *testing.T, cl *client.Client, s *plan.Schema, from, n, keys int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := from; i < from+n; i += 500 {
		var b []client.StreamRecord
		for j := i; j < min(i+500, from+n); j++ {
			row := typedRow(int64(j%keys), int64(j))
			v, err := s.EncodeRow(row)
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, client.StreamRecord{Key: plan.KeyBytes(row[0]), Value: v})
		}
		if _, err := cl.AppendBatch(ctx, "s", b); err != nil {
			t.Fatal(err)
		}
	}
}

// tableText returns the rows of query, each printed, sorted.
func tableText(t testing.TB, db *pgtest.DB, query string) []string {
	t.Helper()
	conn := db.Connect(t)
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmtValues(vals))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// fmtValues prints a row's values in one form for Lockstep's (plan values) and
// PostgreSQL's (pgx values): times as Unix ms, intervals as ms.
func fmtValues(vals []any) string {
	var parts []string
	for _, v := range vals {
		switch x := v.(type) {
		case time.Time:
			v = x.UnixMilli()
		case pgtype.Interval:
			v = x.Microseconds / 1000
		case int32:
			v = int64(x)
		}
		parts = append(parts, fmt.Sprintf("%v", v))
	}
	return strings.Join(parts, "|")
}

// runUntil runs s until query's first value reaches want, or fails the test.
func runUntil(t *testing.T, s *pgsink.Sink, db *pgtest.DB, query string, want int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	testutil.WaitFor(t, time.Minute, func() error {
		select {
		case err := <-done:
			t.Fatalf("Run ended early: %v", err)
		default:
		}
		if n := scalar(t, db, query); n < want {
			return fmt.Errorf("%d, want %d", n, want)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
}

// crashAt runs s until query's first value reaches at least at, then crashes it (its
// connection cut under it, mid-transaction or between two) and stops it.
func crashAt(t *testing.T, s *pgsink.Sink, db *pgtest.DB, query string, at int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	testutil.WaitFor(t, time.Minute, func() error {
		select {
		case err := <-done:
			t.Fatalf("Run ended early: %v", err)
		default:
		}
		if n := scalar(t, db, query); n < at {
			return fmt.Errorf("%d, want %d", n, at)
		}
		return nil
	})
	s.Crash()
	// A sink that wrote everything waits in its source and does not see the cut
	// connection: the end of its context stops it then.
	cancel()
	<-done
	s.Close()
}

func scalar(t testing.TB, db *pgtest.DB, query string) int {
	t.Helper()
	conn := db.Connect(t)
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func typedConfig(t *testing.T, db *pgtest.DB, s plan.Schema, mode pgsink.Mode) pgsink.Config {
	return pgsink.Config{DSN: db.DSN, Table: "typed", Stream: s.Name, Rows: &pgsink.Rows{Schema: s, Mode: mode},
		Logger: testutil.Logger(t, slog.LevelInfo)}
}

// typedOrigin reads stream s in small pushes, so a run has many transactions to cut.
func typedOrigin(cl *client.Client) pgsink.Origin {
	return &pgsink.SubscribeOrigin{Client: cl, Options: []client.SubscribeOption{client.WithCredit(97, 1<<20)}}
}

// TestTypedAppendExactlyOnce: the append mode creates the table with a column of each
// type, writes each record's columns, and across crashes (the connection cut under the
// sink) and restarts writes every record exactly once, every value as appended.
func TestTypedAppendExactlyOnce(t *testing.T) {
	cl := cluster(t)
	db := pgtest.New(t)
	s := compileSchema(t, typedScript, "s")
	const n = 4000
	appendTyped(t, cl, &s, 0, n, n) // a key per record: the id says which record
	ctx := context.Background()
	const count = `SELECT count(*) FROM typed`
	for i := 1; i <= 3; i++ {
		sk, err := pgsink.Open(ctx, typedConfig(t, db, s, pgsink.ModeAppend), typedOrigin(cl))
		if err != nil {
			t.Fatal(err)
		}
		crashAt(t, sk, db, count, i*n/5)
	}
	sk, err := pgsink.Open(ctx, typedConfig(t, db, s, pgsink.ModeAppend), typedOrigin(cl))
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Close()
	runUntil(t, sk, db, count, n)
	var want []string
	for i := int64(0); i < n; i++ {
		want = append(want, fmtValues(typedRow(i, i)))
	}
	slices.Sort(want)
	got := tableText(t, db, `SELECT id, name, score, ok, at, took, blob FROM typed`)
	if !slices.Equal(got, want) {
		t.Fatalf("table: %d rows, want %d; first %q, want %q", len(got), len(want), got[:min(3, len(got))], want[:3])
	}
	if d := scalar(t, db, `SELECT count(DISTINCT id) FROM typed`); d != n {
		t.Fatalf("%d distinct ids, want %d", d, n)
	}
}

// TestTypedUpsertExactlyOnce: the upsert mode keeps one row per key, the last record
// of the key, across crashes and restarts, and the stored offsets cover every record.
func TestTypedUpsertExactlyOnce(t *testing.T) {
	cl := cluster(t)
	db := pgtest.New(t)
	s := compileSchema(t, typedScript, "s")
	const n, keys = 5000, 300
	appendTyped(t, cl, &s, 0, n, keys)
	ctx := context.Background()
	const offsets = `SELECT coalesce(sum(next_offset), 0) FROM lockstep_sink_offsets`
	for i := 1; i <= 3; i++ {
		sk, err := pgsink.Open(ctx, typedConfig(t, db, s, pgsink.ModeUpsert), typedOrigin(cl))
		if err != nil {
			t.Fatal(err)
		}
		crashAt(t, sk, db, offsets, i*n/5)
	}
	sk, err := pgsink.Open(ctx, typedConfig(t, db, s, pgsink.ModeUpsert), typedOrigin(cl))
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Close()
	runUntil(t, sk, db, offsets, n)
	var want []string
	for k := int64(0); k < keys; k++ {
		last := k + (n-1-k)/keys*keys // the last record of key k
		want = append(want, fmtValues(typedRow(k, last)))
	}
	slices.Sort(want)
	got := tableText(t, db, `SELECT id, name, score, ok, at, took, blob FROM typed`)
	if !slices.Equal(got, want) {
		t.Fatalf("table: %d rows, want %d; first %q, want %q", len(got), len(want), got[:min(3, len(got))], want[:3])
	}
}

// viewScript has a view whose changelog inserts, updates and deletes (HAVING stops
// holding when a page reaches 4 clicks of weight).
const viewScript = `CREATE STREAM clicks (usr text, page text, n bigint) WITH (key = 'usr');
CREATE MATERIALIZED VIEW per_page AS
  SELECT page, count(*) AS clicks, sum(n) AS total FROM clicks GROUP BY page HAVING sum(n) < 40`

// TestTypedViewUpsertEqualsView: a view's changelog, written by the processors of a
// replica, sunk in upsert mode in small batches with crashes between, leaves in
// PostgreSQL exactly the view's rows in Lockstep, which are also the batch query's result
// over the input rows in PostgreSQL.
func TestTypedViewUpsertEqualsView(t *testing.T) {
	h := sqltest.New(t, 4, viewScript)
	db := pgtest.New(t)
	db.Exec(t, `CREATE TABLE clicks_input (usr text, page text, n bigint)`)
	rng := rand.New(rand.NewPCG(1, 2))
	var ins []string
	for i := 0; i < 600; i++ {
		ins = append(ins, fmt.Sprintf("('u%d', 'p%d', %d)", rng.IntN(50), rng.IntN(40), rng.IntN(6)))
	}
	for i := 0; i < len(ins); i += 50 {
		stmt := "INSERT INTO clicks VALUES " + strings.Join(ins[i:i+50], ", ")
		h.Insert(stmt)
		db.Exec(t, strings.Replace(stmt, "clicks", "clicks_input", 1))
	}
	changes := clientRecords(h.StreamParts("per_page"))
	deletes, total := 0, 0
	for _, p := range changes {
		for _, r := range p {
			total++
			if r.Data[0] == plan.ChangeDelete {
				deletes++
			}
		}
	}
	if deletes == 0 {
		t.Fatalf("the view's changelog (%d records) has no delete: the test does not test deletes", total)
	}
	schema := h.ViewPlan("per_page").Schema
	origin := &sliceOrigin{stream: "per_page", parts: changes, batch: 7}
	ctx := context.Background()
	const offsets = `SELECT coalesce(sum(next_offset), 0) FROM lockstep_sink_offsets`
	for i := 1; i <= 2; i++ {
		sk, err := pgsink.Open(ctx, typedConfig(t, db, schema, pgsink.ModeUpsert), origin)
		if err != nil {
			t.Fatal(err)
		}
		crashAt(t, sk, db, offsets, i*total/3)
	}
	sk, err := pgsink.Open(ctx, typedConfig(t, db, schema, pgsink.ModeUpsert), origin)
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Close()
	runUntil(t, sk, db, offsets, total)

	var view []string
	for _, r := range h.View("per_page") {
		view = append(view, fmtValues(r))
	}
	slices.Sort(view)
	got := tableText(t, db, `SELECT page, clicks, total FROM typed`)
	batch := tableText(t, db, `SELECT page, count(*), sum(n)::bigint FROM clicks_input GROUP BY page HAVING sum(n) < 40`)
	if !slices.Equal(got, view) {
		t.Fatalf("PostgreSQL table (%d rows) is not the view (%d rows):\n%q\n%q", len(got), len(view), got, view)
	}
	if !slices.Equal(view, batch) {
		t.Fatalf("the view (%d rows) is not the batch query (%d rows):\n%q\n%q", len(view), len(batch), view, batch)
	}
	t.Logf("%d changes (%d deletes), %d rows, %d sources opened", total, deletes, len(got), origin.opened)
}

// TestTypedBadRecordStops: a record that does not decode with the schema stops the
// sink with a *BadRecordError naming it; its batch is not written, the offsets stay
// before it, and a restart stops at it again.
func TestTypedBadRecordStops(t *testing.T) {
	cl := cluster(t)
	db := pgtest.New(t)
	s := compileSchema(t, typedScript, "s")
	appendTyped(t, cl, &s, 0, 100, 100)
	if _, err := cl.AppendBatch(context.Background(), "s", []client.StreamRecord{{Key: []byte("bad"), Value: []byte("not msgpack")}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		sk, err := pgsink.Open(context.Background(), typedConfig(t, db, s, pgsink.ModeAppend), typedOrigin(cl))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = sk.Run(ctx)
		cancel()
		sk.Close()
		var be *pgsink.BadRecordError
		if !errors.As(err, &be) || !errors.Is(err, pgsink.ErrBadRecord) {
			t.Fatalf("Run: %v, want a *BadRecordError", err)
		}
		var re *plan.RowError
		if !errors.As(err, &re) {
			t.Errorf("Run: %v does not hold the *plan.RowError", err)
		}
		// The bad record's partition: every record before it, none of its batch.
		stored := scalar(t, db, fmt.Sprintf(`SELECT coalesce(sum(next_offset), 0) FROM lockstep_sink_offsets WHERE partition = %d`, be.Partition))
		if uint64(stored) > be.Offset {
			t.Fatalf("partition %d: stored offset %d is past the bad record %d", be.Partition, stored, be.Offset)
		}
		if n := scalar(t, db, `SELECT count(*) FROM typed`); n > 100 {
			t.Fatalf("%d rows, want at most the 100 good ones", n)
		}
	}
}

// TestTypedTableShapeRefused: a table of the wrong shape is refused with ErrTableSchema
// before anything is written (the sink's own tables are not even created).
func TestTypedTableShapeRefused(t *testing.T) {
	cl := cluster(t)
	s := compileSchema(t, typedScript, "s")
	appendTyped(t, cl, &s, 0, 10, 10)
	cases := []struct {
		name, ddl string
		mode      pgsink.Mode
		want      string
	}{
		{"missing column", `CREATE TABLE typed (id bigint PRIMARY KEY, name text, score double precision, ok boolean, at timestamptz, took interval)`, pgsink.ModeAppend, `no column "blob"`},
		{"wrong type", `CREATE TABLE typed (id bigint PRIMARY KEY, name text, score real, ok boolean, at timestamptz, took interval, blob bytea)`, pgsink.ModeAppend, `column "score" is real, want double precision`},
		{"timestamp without time zone", `CREATE TABLE typed (id bigint, name text, score double precision, ok boolean, at timestamp, took interval, blob bytea)`, pgsink.ModeAppend, `column "at" is timestamp without time zone`},
		{"no unique key", `CREATE TABLE typed (id bigint, name text, score double precision, ok boolean, at timestamptz, took interval, blob bytea)`, pgsink.ModeUpsert, `no unique key on ("id")`},
		{"unique key on two columns", `CREATE TABLE typed (id bigint, name text, score double precision, ok boolean, at timestamptz, took interval, blob bytea, UNIQUE (id, name))`, pgsink.ModeUpsert, `no unique key on ("id")`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := pgtest.New(t)
			db.Exec(t, c.ddl)
			sk, err := pgsink.Open(context.Background(), typedConfig(t, db, s, c.mode), typedOrigin(cl))
			if err == nil {
				sk.Close()
				t.Fatal("Open: nil error")
			}
			if !errors.Is(err, pgsink.ErrTableSchema) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open: %v, want ErrTableSchema saying %q", err, c.want)
			}
			if n := scalar(t, db, `SELECT count(*) FROM pg_class WHERE relname LIKE 'lockstep_sink_%' AND relpersistence = 'p'`); n != 0 {
				t.Fatalf("%d of the sink's tables created", n)
			}
		})
	}
	t.Run("right shape by hand", func(t *testing.T) {
		db := pgtest.New(t)
		db.Exec(t, `CREATE TABLE typed (extra text DEFAULT 'x', id bigint UNIQUE, name text, score double precision, ok boolean, at timestamptz, took interval, blob bytea)`)
		sk, err := pgsink.Open(context.Background(), typedConfig(t, db, s, pgsink.ModeUpsert), typedOrigin(cl))
		if err != nil {
			t.Fatal(err)
		}
		defer sk.Close()
		runUntil(t, sk, db, `SELECT count(*) FROM typed`, 10)
	})
	t.Run("unknown stream creates nothing", func(t *testing.T) {
		db := pgtest.New(t)
		other := s
		other.Name = "nope"
		if _, err := pgsink.Open(context.Background(), pgsink.Config{DSN: db.DSN, Table: "typed", Stream: "nope",
			Rows: &pgsink.Rows{Schema: other, Mode: pgsink.ModeAppend}}, typedOrigin(cl)); !errors.Is(err, pgsink.ErrUnknownStream) {
			t.Fatalf("Open: %v, want ErrUnknownStream", err)
		}
		if n := scalar(t, db, `SELECT count(*) FROM pg_class WHERE relname = 'typed'`); n != 0 {
			t.Fatal("the table was created for an unknown stream")
		}
	})
	t.Run("bad config", func(t *testing.T) {
		db := pgtest.New(t)
		view := compileSchema(t, viewScript, "per_page")
		for _, cfg := range []pgsink.Config{
			typedConfig(t, db, s, "merge"),
			{DSN: db.DSN, Table: "typed", Stream: "per_page", Rows: &pgsink.Rows{Schema: view, Mode: pgsink.ModeAppend}},
			{DSN: db.DSN, Table: "typed", Stream: "other", Rows: &pgsink.Rows{Schema: s, Mode: pgsink.ModeAppend}},
		} {
			if _, err := pgsink.Open(context.Background(), cfg, typedOrigin(cl)); !errors.Is(err, pgsink.ErrBadConfig) {
				t.Errorf("Open(%v): %v, want ErrBadConfig", cfg.Rows.Mode, err)
			}
		}
	})
}

// TestRowsFor: the schema named by the stream, the default mode by its kind, a name the
// script lacks and a view in append mode refused.
func TestRowsFor(t *testing.T) {
	art, err := sql.Compile(viewScript, sql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for stream, want := range map[string]pgsink.Mode{"clicks": pgsink.ModeAppend, "per_page": pgsink.ModeUpsert} {
		r, err := pgsink.RowsFor(art.Schemas(), stream, "")
		if err != nil || r.Schema.Name != stream || r.Mode != want {
			t.Errorf("RowsFor(%s): %+v, %v; want mode %s", stream, r, err, want)
		}
	}
	if _, err := pgsink.RowsFor(art.Schemas(), "nope", ""); !errors.Is(err, pgsink.ErrUnknownStream) {
		t.Errorf("RowsFor(nope): %v, want ErrUnknownStream", err)
	}
	if _, err := pgsink.RowsFor(art.Schemas(), "per_page", pgsink.ModeAppend); !errors.Is(err, pgsink.ErrBadConfig) {
		t.Errorf("RowsFor(per_page, append): %v, want ErrBadConfig", err)
	}
}
