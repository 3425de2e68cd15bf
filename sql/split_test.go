package sql_test

import (
	"reflect"
	"testing"

	"github.com/lockstepdb/lockstep/sql"
)

func TestSplitStatements(t *testing.T) {
	for i, tc := range []struct {
		script   string
		want     []sql.Statement
		complete bool
	}{
		{"SELECT 1;", []sql.Statement{{Text: "SELECT 1", Line: 1, Column: 1}}, true},
		{"SELECT ';' FROM t; -- a ; comment\n  INSERT INTO s VALUES ('it''s;')",
			[]sql.Statement{{Text: "SELECT ';' FROM t", Line: 1, Column: 1}, {Text: "INSERT INTO s VALUES ('it''s;')", Line: 2, Column: 3}}, false},
		{"/* ; */ CREATE STREAM \"a;b\" (k text);\n\n", []sql.Statement{{Text: "CREATE STREAM \"a;b\" (k text)", Line: 1, Column: 9}}, true},
		{"SELECT 'open;", []sql.Statement{{Text: "SELECT 'open;", Line: 1, Column: 1}}, false},
		{"  -- only a comment\n", nil, true},
		{"a;;b;", []sql.Statement{{Text: "a", Line: 1, Column: 1}, {Text: "b", Line: 1, Column: 4}}, true},
	} {
		got, complete := sql.SplitStatements(tc.script)
		if !reflect.DeepEqual(got, tc.want) || complete != tc.complete {
			t.Errorf("#%d: got %+v %t, want %+v %t", i, got, complete, tc.want, tc.complete)
		}
	}
	s := sql.Statement{Line: 3, Column: 5}
	if l, c := s.Place(1, 10); l != 3 || c != 14 {
		t.Errorf("place 1:10 of a statement at 3:5: got %d:%d", l, c)
	}
	if l, c := s.Place(2, 7); l != 4 || c != 7 {
		t.Errorf("place 2:7 of a statement at 3:5: got %d:%d", l, c)
	}
}

func TestParseCommand(t *testing.T) {
	for i, tc := range []struct {
		text  string
		kind  sql.CommandKind
		names []string
		err   bool
	}{
		{"  -- c\n create stream s (k text)", sql.CmdDeploy, nil, false},
		{"INSERT INTO s VALUES ('a')", sql.CmdInsert, nil, false},
		{"select * from v", sql.CmdQuery, nil, false},
		{"DROP MATERIALIZED VIEW v, w;", sql.CmdDrop, []string{"v", "w"}, false},
		{"drop stream if exists S", sql.CmdDrop, []string{"s"}, false},
		{"SHOW views", sql.CmdShow, nil, false},
		{"show schema Per_Page;", sql.CmdShow, []string{"per_page"}, false},
		{"SHOW SCHEMA", 0, nil, true},
		{"EXPLAIN v", sql.CmdExplain, []string{"v"}, false},
		{"EXPLAIN CREATE MATERIALIZED VIEW v AS SELECT k FROM s", sql.CmdExplain, nil, false},
		{"DROP INDEX i", 0, nil, true},
		{"SHOW everything", 0, nil, true},
		{"UPDATE s SET k = 1", 0, nil, true},
		{"   ", 0, nil, true},
	} {
		c, err := sql.ParseCommand(tc.text)
		if (err != nil) != tc.err || c.Kind != tc.kind || !reflect.DeepEqual(c.Names, tc.names) {
			t.Errorf("#%d %q: got %+v %v", i, tc.text, c, err)
		}
		var se *sql.Error
		if err != nil && !errorsAs(err, &se) {
			t.Errorf("#%d: error %v is not an *sql.Error", i, err)
		}
	}
	c, _ := sql.ParseCommand("EXPLAIN CREATE STREAM s (k text) WITH (key = 'x')")
	if _, err := sql.Compile(c.Text, sql.Options{}); err == nil {
		t.Error("EXPLAIN of a bad script compiled")
	} else if se := err.(*sql.Error); se.Column != 40 {
		t.Errorf("EXPLAIN's script error at column %d, want 40 (the user's text): %v", se.Column, err)
	}
}

func errorsAs(err error, target **sql.Error) bool {
	e, ok := err.(*sql.Error)
	*target = e
	return ok
}
