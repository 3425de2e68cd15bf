package sql_test

import (
	"errors"
	"testing"

	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

const badBase = `CREATE STREAM s (k text, n bigint, d double precision, ts timestamp)
  WITH (key = 'k', event_time = 'ts');
`

// Bad input gets a clear, typed error naming the place, and nothing is deployed
// (DESIGN.md invariant 7; COMMON.md).
func TestCompileErrors(t *testing.T) {
	tests := []struct {
		sql       string
		kind      error
		line, col int
	}{
		{badBase + "CREATE MATERIALIZED VIEW v AS SELEC k FROM s;", sql.ErrSyntax, 3, 31},
		{badBase + "CREATE MATERIALIZED VIEW v AS\n  SELECT k, nope FROM s;", sql.ErrUnknown, 4, 13},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT k FROM nowhere;", sql.ErrUnknown, 3, 45},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT k + 1 FROM s;", sql.ErrType, 3, 40},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT k FROM s WHERE n;", sql.ErrType, 3, 53},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT k, count(*) FROM s GROUP BY n;", sql.ErrDefinition, 3, 38},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT k, now() FROM s;", sql.ErrUnsupported, 3, 41},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT k FROM s ORDER BY k;", sql.ErrUnsupported, 3, 1},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT a.k FROM s a LEFT JOIN s b ON a.k = b.k;", sql.ErrUnsupported, 3, 72}, // an outer join with no bound: at ON
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT a.k FROM s a JOIN s b ON a.n < b.n;", sql.ErrUnsupported, 3, 67},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT a.k FROM s a JOIN s b ON a.d = b.d;", sql.ErrUnsupported, 3, 67},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT count(*) FROM s a JOIN s b ON a.k = b.k;", sql.ErrUnsupported, 3, 38},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT a.k FROM s a JOIN s b\n  ON a.k = b.k AND b.ts > a.ts + INTERVAL '1 second' AND b.ts < a.ts;", sql.ErrDefinition, 4, 16},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT a.k FROM HOP(s, ts, INTERVAL '1 second', INTERVAL '2 seconds') a JOIN s b ON a.k = b.k;", sql.ErrUnsupported, 3, 47},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT a.k FROM s a JOIN s b ON a.k = b.k AND a.window_start = b.ts;", sql.ErrUnknown, 3, 77},
		{"CREATE STREAM t (a bigint) WITH (key = 'a', format = 'csv');", sql.ErrDefinition, 1, 45},
		// Views over views, aggregates over joins (plan version 3): each bad use at its place.
		{badBase + `CREATE MATERIALIZED VIEW g AS SELECT k, count(*) AS c FROM s GROUP BY k;
CREATE MATERIALIZED VIEW w AS SELECT n, max(d) AS m, window_end AS we FROM TUMBLE(s, ts, INTERVAL '1 second') GROUP BY window_start, window_end, n EMIT ON WINDOW CLOSE;
` + "CREATE MATERIALIZED VIEW v AS SELECT k, c FROM g;", sql.ErrUnsupported, 5, 48},
		{badBase + `CREATE MATERIALIZED VIEW g AS SELECT k, count(*) AS c FROM s GROUP BY k;
CREATE MATERIALIZED VIEW w AS SELECT n, max(d) AS m, window_end AS we FROM TUMBLE(s, ts, INTERVAL '1 second') GROUP BY window_start, window_end, n EMIT ON WINDOW CLOSE;
` + "CREATE MATERIALIZED VIEW v AS SELECT c, max(k) FROM g GROUP BY c;", sql.ErrUnsupported, 5, 41},
		{badBase + `CREATE MATERIALIZED VIEW g AS SELECT k, count(*) AS c FROM s GROUP BY k;
CREATE MATERIALIZED VIEW w AS SELECT n, max(d) AS m, window_end AS we FROM TUMBLE(s, ts, INTERVAL '1 second') GROUP BY window_start, window_end, n EMIT ON WINDOW CLOSE;
` + "CREATE MATERIALIZED VIEW v AS SELECT c, sum(c), min(c) FROM g GROUP BY c;", sql.ErrUnsupported, 5, 49},
		{badBase + `CREATE MATERIALIZED VIEW g AS SELECT k, count(*) AS c FROM s GROUP BY k;
CREATE MATERIALIZED VIEW w AS SELECT n, max(d) AS m, window_end AS we FROM TUMBLE(s, ts, INTERVAL '1 second') GROUP BY window_start, window_end, n EMIT ON WINDOW CLOSE;
` + "CREATE MATERIALIZED VIEW v AS SELECT a.k FROM s a JOIN g b ON a.k = b.k;", sql.ErrUnsupported, 5, 56},
		{badBase + `CREATE MATERIALIZED VIEW g AS SELECT k, count(*) AS c FROM s GROUP BY k;
CREATE MATERIALIZED VIEW w AS SELECT n, max(d) AS m, window_end AS we FROM TUMBLE(s, ts, INTERVAL '1 second') GROUP BY window_start, window_end, n EMIT ON WINDOW CLOSE;
` + "CREATE MATERIALIZED VIEW v AS SELECT a.k FROM s a JOIN w b ON a.n = b.n;", sql.ErrUnsupported, 5, 67},
		{badBase + `CREATE MATERIALIZED VIEW g AS SELECT k, count(*) AS c FROM s GROUP BY k;
CREATE MATERIALIZED VIEW w AS SELECT n, max(d) AS m, window_end AS we FROM TUMBLE(s, ts, INTERVAL '1 second') GROUP BY window_start, window_end, n EMIT ON WINDOW CLOSE;
` + "CREATE MATERIALIZED VIEW v AS SELECT window_start, count(*) FROM TUMBLE(w, we, INTERVAL '1 second') GROUP BY window_start;", sql.ErrUnsupported, 5, 73},
		{badBase + `CREATE MATERIALIZED VIEW g AS SELECT k, count(*) AS c FROM s GROUP BY k;
CREATE MATERIALIZED VIEW w AS SELECT n, max(d) AS m, window_end AS we FROM TUMBLE(s, ts, INTERVAL '1 second') GROUP BY window_start, window_end, n EMIT ON WINDOW CLOSE;
` + "CREATE MATERIALIZED VIEW v AS SELECT a.k, count(*) FROM s a JOIN w b ON a.n = b.n AND a.ts < b.we GROUP BY a.k;", sql.ErrUnsupported, 5, 108},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT k FROM s EMIT ON WINDOW CLOSE;", sql.ErrDefinition, 3, 47},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT count(*) FROM TUMBLE(s, ts, INTERVAL '1 minute');", sql.ErrDefinition, 3, 52},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT window_start, sum(k) FROM TUMBLE(s, ts, INTERVAL '1 minute') GROUP BY window_start;", sql.ErrType, 3, 52},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT window_start FROM TUMBLE(s, n, INTERVAL '1 minute') GROUP BY 1;", sql.ErrDefinition, 3, 66},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT window_start FROM HOP(s, ts, INTERVAL '40 seconds', INTERVAL '1 minute') GROUP BY 1;", sql.ErrDefinition, 3, 56},
		{badBase + "CREATE MATERIALIZED VIEW s AS SELECT k FROM s;", sql.ErrDefinition, 3, 26},
		{"CREATE STREAM t (a bigint);", sql.ErrDefinition, 1, 15},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT n, count(*) FROM s GROUP BY n;\nCREATE MATERIALIZED VIEW \"v.late\" AS SELECT k FROM s;", sql.ErrDefinition, 4, 26},
		{badBase + "CREATE MATERIALIZED VIEW \"v.late\" AS SELECT k FROM s;\nCREATE MATERIALIZED VIEW v AS SELECT k FROM s;", sql.ErrDefinition, 4, 26},
		{"CREATE STREAM t (a bigint, b text) WITH (key = 'c');", sql.ErrUnknown, 1, 42},
		{"CREATE STREAM t (a bigint, b text) WITH (key = 'a', event_time = 'b');", sql.ErrType, 1, 53},
		{"CREATE STREAM t (a bigint, b blob) WITH (key = 'a');", sql.ErrUnknown, 1, 30},
		{"CREATE STREAM t (a bigint) WITH (key = 'a', out_of_orderness = 'soon');", sql.ErrDefinition, 1, 45},
		{"CREATE STREAM t (a bigint) WITH (key = 'a');\nINSERT INTO t VALUES (1);", sql.ErrUnsupported, 2, 1},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT k FROM s\nEMIT CHANGES AND MORE;", sql.ErrSyntax, 4, 6},
		{badBase + "CREATE MATERIALIZED VIEW v AS SELECT k, n / 'x' FROM s;", sql.ErrType, 3, 45},
	}
	for i, tt := range tests {
		art, err := sql.Compile(tt.sql, sql.Options{})
		var se *sql.Error
		if !errors.As(err, &se) || !errors.Is(err, tt.kind) {
			t.Errorf("#%d: got %v, want a %v *sql.Error\n%s", i, err, tt.kind, tt.sql)
			continue
		}
		if art != nil {
			t.Errorf("#%d: an artifact with the error", i)
		}
		if se.Line != tt.line || se.Column != tt.col {
			t.Errorf("#%d: got %d:%d, want %d:%d (%v)", i, se.Line, se.Column, tt.line, tt.col, err)
		}
	}
}

func TestInsertErrors(t *testing.T) {
	art, err := sql.Compile(badBase, sql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		sql       string
		kind      error
		line, col int
	}{
		{"INSERT INTO s VALUES ('a', 1, 1.5, '2024-01-01 00:00:00', 9);", sql.ErrDefinition, 1, 23},
		{"INSERT INTO s VALUES ('a', 'x', 1.5, '2024-01-01 00:00:00');", sql.ErrType, 1, 28},
		{"INSERT INTO s VALUES ('a', 1, true, '2024-01-01 00:00:00');", sql.ErrType, 1, 31},
		{"INSERT INTO s VALUES ('a', 1, 1.5, 'yesterday');", sql.ErrType, 1, 36},
		{"INSERT INTO s VALUES (NULL, 1, 1.5, '2024-01-01 00:00:00');", sql.ErrType, 1, 23},
		{"INSERT INTO s (k, nope) VALUES ('a', 1);", sql.ErrUnknown, 1, 19},
		{"INSERT INTO nowhere VALUES (1);", sql.ErrUnknown, 1, 13},
	}
	for i, tt := range tests {
		recs, err := sql.EncodeInsert(tt.sql, art.Schemas())
		var se *sql.Error
		if !errors.As(err, &se) || !errors.Is(err, tt.kind) || recs != nil {
			t.Errorf("#%d: got %v (%d records), want a %v *sql.Error", i, err, len(recs), tt.kind)
			continue
		}
		if se.Line != tt.line || se.Column != tt.col {
			t.Errorf("#%d: got %d:%d, want %d:%d (%v)", i, se.Line, se.Column, tt.line, tt.col, err)
		}
	}
	recs, err := sql.EncodeInsert("INSERT INTO s (ts, k) VALUES ('2024-01-01 00:00:01.5', 'u1');", art.Schemas())
	if err != nil || len(recs) != 1 || string(recs[0].Key) != "u1" || recs[0].EventTimeMs != 1704067201500 {
		t.Fatalf("got %+v, %v", recs, err)
	}
	row, err := art.Schemas()[0].DecodeRow(recs[0].Value)
	if err != nil || row[1] != nil || row[2] != nil {
		t.Fatalf("row %v, %v: want NULLs for the columns left out", row, err)
	}
}

// A plan that cannot register registers nothing: its first processor's name is taken.
func TestRegisterAllOrNothing(t *testing.T) {
	art, err := sql.Compile(badBase+`CREATE MATERIALIZED VIEW v AS SELECT n, count(*) FROM s GROUP BY n;
CREATE MATERIALIZED VIEW w AS SELECT k FROM s;`, sql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := procedures.New()
	if err := procedures.RegisterProcessor(reg, "w.project", "other", func(*partitionTx, partitionRecord) error { return nil }); err != nil {
		t.Fatal(err)
	}
	before := len(reg.ListProcessors())
	if err := art.Register(reg); !errors.Is(err, plan.ErrRegistered) {
		t.Fatalf("got %v, want ErrRegistered", err)
	}
	if n := len(reg.ListProcessors()); n != before {
		t.Fatalf("%d processors after a refused Register, want %d", n, before)
	}
}

// A plan of another format version is refused by name; a corrupt one too.
func TestDecodeRefuses(t *testing.T) {
	art, err := sql.Compile(badBase+"CREATE MATERIALIZED VIEW v AS SELECT k FROM s;", sql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := *art.Plan
	p.Version = plan.Version + 1
	b, _ := p.Encode()
	if _, err := plan.Decode(b); !errors.Is(err, plan.ErrVersion) {
		t.Errorf("version %d: got %v, want ErrVersion", p.Version, err)
	}
	good, _ := art.Encode()
	p2, err := plan.Decode(good)
	if err != nil {
		t.Fatal(err)
	}
	p2.Views[0].Output[0].Col = 99
	b, _ = p2.Encode()
	if _, err := plan.Decode(b); !errors.Is(err, plan.ErrBadPlan) {
		t.Errorf("column out of range: got %v, want ErrBadPlan", err)
	}
}

// A name taken in the cluster outside the catalog (Options.Exists) is refused, and so is
// one a view would derive from its own.
func TestCompileRefusesExistingNames(t *testing.T) {
	exists := func(name string) bool { return name == "taken" || name == "w.by_key" }
	for i, src := range []string{
		"CREATE STREAM taken (a bigint) WITH (key = 'a');",
		badBase + "CREATE MATERIALIZED VIEW w AS SELECT n, count(*) FROM s GROUP BY n;",
	} {
		if _, err := sql.Compile(src, sql.Options{Exists: exists}); !errors.Is(err, sql.ErrDefinition) {
			t.Errorf("#%d: got %v, want ErrDefinition", i, err)
		}
	}
	if _, err := sql.Compile(badBase, sql.Options{Exists: exists}); err != nil {
		t.Errorf("free names: %v", err)
	}
}

func TestQueryErrors(t *testing.T) {
	art, err := sql.Compile(badBase+"CREATE MATERIALIZED VIEW v AS SELECT n, count(*) AS c FROM s GROUP BY n;", sql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range []struct {
		q    string
		kind error
	}{
		{"SELECT k FROM s", sql.ErrUnsupported}, // a stream keeps no rows
		{"SELECT nope FROM v", sql.ErrUnknown},
		{"SELECT n FROM v WHERE c", sql.ErrType},
		{"SELECT n FROM v ORDER BY 3", sql.ErrDefinition},
		{"SELECT n FROM v LIMIT 'x'", sql.ErrType},
		{"SELECT n, count(*) FROM v GROUP BY n", sql.ErrUnsupported},
		{"SELECT n FROM nowhere", sql.ErrUnknown},
		{"SELECT n FROM v; SELECT c FROM v", sql.ErrUnsupported},
	} {
		if _, err := sql.CompileQuery(tt.q, art.Schemas()); !errors.Is(err, tt.kind) {
			t.Errorf("#%d %s: got %v, want %v", i, tt.q, err, tt.kind)
		}
	}
}

func TestSessionErrors(t *testing.T) {
	for i, v := range []string{
		"SELECT window_start, count(*) FROM SESSION(s, ts, INTERVAL '1 minute', INTERVAL '1 minute') GROUP BY 1",
		"SELECT window_start, count(*) FROM SESSION(s, ts, INTERVAL '0 seconds') GROUP BY 1",
		"SELECT window_start, count(*) FROM SESSION(s, n, INTERVAL '1 minute') GROUP BY 1",
	} {
		if _, err := sql.Compile(badBase+"CREATE MATERIALIZED VIEW v AS "+v+";", sql.Options{}); !errors.Is(err, sql.ErrDefinition) {
			t.Errorf("#%d: got %v, want ErrDefinition", i, err)
		}
	}
}
