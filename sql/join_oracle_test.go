package sql_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/testutil/pgtest"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

const joinScript = `
CREATE TABLE users (id text, name text, tier bigint) WITH (key = 'id');
CREATE STREAM orders (oid text, uid text, amount bigint, ts timestamp) WITH (key = 'oid', event_time = 'ts');
CREATE MATERIALIZED VIEW scored AS
  SELECT o.oid, u.name, o.amount * u.tier AS score FROM orders o JOIN users u ON o.uid = u.id WHERE u.tier > 1;
CREATE MATERIALIZED VIEW named AS
  SELECT oid, coalesce(name, 'unknown') AS who, amount FROM orders LEFT JOIN users ON users.id = orders.uid;
`

// Stream–table joins, with PostgreSQL as the oracle: with every table row written
// before the stream rows, the views equal the batch joins over the table's final rows.
func TestJoinsMatchPostgres(t *testing.T) {
	db := pgtest.New(t)
	conn := db.Connect(t)
	for seed := range 5 {
		r := rand.New(rand.NewPCG(uint64(seed), 99))
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { runJoinCase(t, conn, r) })
	}
}

func runJoinCase(t *testing.T, conn *pgx.Conn, r *rand.Rand) {
	h := newHarness(t, 1+r.IntN(4), joinScript)
	users, orders := h.Art.Plan.Relations[0], h.Art.Plan.Relations[1]
	final := map[string][]any{}
	var entries []batch.Entry
	now := h.Now
	add := func(s plan.Schema, rows [][]any) {
		for i := 0; i < len(rows); {
			now += int64(1+r.IntN(50)) * 1e6
			e := batch.Entry{Time: now}
			for n := 1 + r.IntN(6); n > 0 && i < len(rows); n-- {
				b, err := s.EncodeRow(rows[i])
				if err != nil {
					t.Fatal(err)
				}
				e.Items = append(e.Items, h.AppendItem(sql.Append{Stream: s.Name, Key: plan.KeyBytes(rows[i][s.Key]), Value: b, EventTimeMs: s.RecordTime(rows[i], 0)}))
				i++
			}
			entries = append(entries, e)
		}
	}
	var urows, orows [][]any
	for range 40 { // upserts: several rows per id, the last one wins
		var tier any = int64(r.IntN(4))
		if r.IntN(8) == 0 {
			tier = nil
		}
		row := []any{fmt.Sprintf("u%d", r.IntN(12)), fmt.Sprintf("n%d", r.IntN(100)), tier}
		urows = append(urows, row)
		final[row[0].(string)] = row
	}
	for i := range 150 {
		var uid any = fmt.Sprintf("u%d", r.IntN(16)) // some ids have no user
		if r.IntN(10) == 0 {
			uid = nil
		}
		orows = append(orows, []any{fmt.Sprintf("o%d", i), uid, int64(r.IntN(100)), oracleBase + int64(i)*10})
	}
	add(users, urows)
	add(orders, orows)
	// A row emitted to another partition in the last entry is joined in the next.
	entries = append(entries, batch.Entry{Time: now + 1e6, Items: []batch.Item{{Kind: batch.KindTick}}})
	h.Apply(randomGroups(r, entries))
	for _, s := range []string{"users.dead", "orders.dead"} {
		if d := h.Stream(s); len(d) > 0 {
			t.Fatalf("%s: %d dead letters", s, len(d))
		}
	}
	schema := fmt.Sprintf("j%d", r.Uint32())
	pgExec(t, conn, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	pgExec(t, conn, "SET search_path TO "+schema)
	pgExec(t, conn, `CREATE TABLE users (id text COLLATE "C" PRIMARY KEY, name text COLLATE "C", tier bigint)`)
	pgExec(t, conn, `CREATE TABLE orders (oid text COLLATE "C", uid text, amount bigint, ts bigint)`)
	var finalRows [][]any
	for _, row := range final {
		finalRows = append(finalRows, row)
	}
	for tbl, rows := range map[string][][]any{"users": finalRows, "orders": orows} {
		cols := []string{"id", "name", "tier"}
		if tbl == "orders" {
			cols = []string{"oid", "uid", "amount", "ts"}
		}
		if _, err := conn.CopyFrom(context.Background(), pgx.Identifier{tbl}, cols, pgx.CopyFromRows(rows)); err != nil {
			t.Fatal(err)
		}
	}
	queries := map[string]string{
		"scored": `SELECT o.oid, u.name, o.amount * u.tier FROM orders o JOIN users u ON o.uid = u.id WHERE u.tier > 1`,
		"named":  `SELECT oid, coalesce(name, 'unknown'), amount FROM orders LEFT JOIN users ON users.id = orders.uid`,
	}
	for v, q := range queries {
		got, want := canonRows(h.View(v)), canonRows(pgRows(t, conn, q))
		if !slices.Equal(got, want) {
			for _, w := range want {
				if !slices.Contains(got, w) {
					t.Logf("missing %s", w)
				}
			}
			for _, g := range got {
				if !slices.Contains(want, g) {
					t.Logf("extra %s", g)
				}
			}
			t.Errorf("view %s: %d rows, PostgreSQL %d\n got %v\nwant %v", v, len(got), len(want), got, want)
		}
	}
	// SELECT over state: the table's and the view's rows, filtered, ordered and limited,
	// as PostgreSQL answers the same query (ORDER BY total, so LIMIT picks the same rows).
	pgExec(t, conn, "CREATE VIEW scored (oid, name, score) AS "+queries["scored"])
	for i, q := range []string{
		"SELECT id, upper(name) AS n, tier * 2 AS t2 FROM users WHERE tier IS NOT NULL ORDER BY tier DESC, id LIMIT 5",
		"SELECT oid, score FROM scored WHERE score > 100 ORDER BY score, oid DESC LIMIT 7",
		"SELECT * FROM users ORDER BY 3, 1",
		"SELECT id FROM users u WHERE u.tier = 0 OR name LIKE 'n1%' ORDER BY id DESC",
		"SELECT name, tier FROM users ORDER BY tier DESC, name, id LIMIT 0",
	} {
		qp, err := sql.CompileQuery(q, h.Art.Schemas())
		if err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		var parts []plan.Scanner
		for _, p := range h.F.Engine().Partitions() {
			parts = append(parts, p)
		}
		rows, err := qp.Run(parts)
		if err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		got, want := canonList(rows), canonList(pgRows(t, conn, q))
		if !slices.Equal(got, want) {
			t.Errorf("query %s:\n got %v\nwant %v", q, got, want)
		}
	}
}

func canonList(rows [][]any) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, canonRow(r))
	}
	return out
}

func TestJoinErrors(t *testing.T) {
	for i, tt := range []struct {
		view string
		kind error
	}{
		{"SELECT * FROM orders JOIN users ON orders.uid = users.name", sql.ErrUnsupported},
		{"SELECT * FROM orders JOIN users ON orders.amount = users.id", sql.ErrType},
		{"SELECT oid, name FROM orders RIGHT JOIN users ON orders.uid = users.id", sql.ErrUnsupported},
		{"SELECT count(*) FROM orders JOIN users ON orders.uid = users.id", sql.ErrUnsupported},
		{"SELECT * FROM users JOIN orders ON orders.uid = users.id", sql.ErrUnsupported},
		{"SELECT oid, nope FROM orders JOIN users u ON orders.uid = u.id", sql.ErrUnknown},
		{"SELECT oid, x.name FROM orders JOIN users u ON orders.uid = u.id", sql.ErrUnknown},
	} {
		_, err := sql.Compile(joinScript+"CREATE MATERIALIZED VIEW bad AS "+tt.view+";", sql.Options{})
		if !errors.Is(err, tt.kind) {
			t.Errorf("#%d: got %v, want %v", i, err, tt.kind)
		}
	}
}
