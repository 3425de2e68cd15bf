package sql_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/lockstepdb/lockstep/sql"
)

// A table is keyed and upserted: its stream keeps the latest row per key (compaction),
// its processor keeps the rows in a table of the same name, and a view over it follows
// each key's latest row, retracting it when it stops passing WHERE.
func TestTableUpserts(t *testing.T) {
	h := newHarness(t, 3, `
CREATE TABLE users (id text, name text, score bigint) WITH (key = 'id');
CREATE MATERIALIZED VIEW good AS SELECT id, upper(name) AS name FROM users WHERE score >= 10;`)
	h.Insert(`INSERT INTO users VALUES ('u1', 'ann', 5), ('u2', 'bob', 20), ('u3', 'cy', 12);
INSERT INTO users VALUES ('u1', 'ann', 15), ('u3', 'cy', 1), ('u2', 'bobby', 30)`)
	users := h.Art.Plan.Relations[0]
	var rows [][]any
	for _, p := range h.F.Engine().Partitions() {
		for _, id := range []string{"u1", "u2", "u3"} {
			if b, ok := p.Get("users", []byte(id)); ok {
				row, err := users.DecodeRow(b)
				if err != nil {
					t.Fatal(err)
				}
				rows = append(rows, row)
			}
		}
	}
	if got, want := rowsText(rows), []string{"u1 ann 15", "u2 bobby 30", "u3 cy 1"}; !slices.Equal(got, want) {
		t.Errorf("table users: got %q, want %q", got, want)
	}
	if got, want := rowsText(h.View("good")), []string{"u1 ANN", "u2 BOBBY"}; !slices.Equal(got, want) {
		t.Errorf("view good: got %q, want %q", got, want)
	}
	var ops []byte
	for _, rec := range h.Stream("good") {
		ops = append(ops, rec.Value[0])
	}
	slices.Sort(ops)
	if string(ops) != "DIIIU" { // u2, u3 in; u1 in; u3 out; u2 updated
		t.Errorf("changelog ops %q, want DIIIU", ops)
	}
	_, err := sql.Compile(`CREATE TABLE users (id text, score bigint) WITH (key = 'id');
CREATE MATERIALIZED VIEW n AS SELECT count(*) FROM users;`, sql.Options{})
	if !errors.Is(err, sql.ErrUnsupported) {
		t.Errorf("aggregate over a table: got %v, want ErrUnsupported", err)
	}
}
