package node

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// TestDropModules: a DROP removes the modules of the names, readers first; it refuses an
// unknown name, a stream a view outside the DROP reads (naming the view), and part of a
// module deployed as one script.
func TestDropModules(t *testing.T) {
	var mods []replica.SQLModule
	var catalog []plan.Schema
	for _, m := range []struct{ name, text string }{
		{"ev", "CREATE STREAM ev (k text, u text) WITH (key = 'k')"},
		{"users", "CREATE TABLE users (u text, n text) WITH (key = 'u')"},
		{"joined", "CREATE MATERIALIZED VIEW joined AS SELECT k, n FROM ev JOIN users ON ev.u = users.u"},
		{"pair", "CREATE STREAM p1 (k text) WITH (key = 'k'); CREATE STREAM p2 (k text) WITH (key = 'k')"},
	} {
		art, err := sql.Compile(m.text, sql.Options{Catalog: catalog})
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		catalog = append(catalog, art.Schemas()...)
		mods = append(mods, replica.SQLModule{Name: m.name, Text: m.text, Plan: art.Plan})
	}
	slices.SortFunc(mods, func(a, b replica.SQLModule) int { return strings.Compare(a.Name, b.Name) })
	for i, tc := range []struct {
		names []string
		want  []string
		err   string
	}{
		{names: []string{"ev", "users", "joined"}, want: []string{"joined", "ev", "users"}},
		{names: []string{"joined"}, want: []string{"joined"}},
		{names: []string{"p1", "p2"}, want: []string{"pair"}},
		{names: []string{"ev"}, err: "view joined reads it"},
		{names: []string{"users"}, err: "view joined reads it"},
		{names: []string{"p1"}, err: "drop them together"},
		{names: []string{"nosuch"}, err: "no stream, table or view"},
	} {
		got, err := dropModules(mods, tc.names, false)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("#%d: got %v %v, want an error saying %q", i, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("#%d: got %v %v, want %v", i, got, err, tc.want)
		}
	}
}
