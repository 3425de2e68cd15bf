package restartplan

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/clusterstatus"
)

// TestRestartPlanOrder: read replicas and learners first, then followers, each by id,
// the leader last; only voters count towards the quorum check.
func TestRestartPlanOrder(t *testing.T) {
	row := func(id, state, suffrage string, replica bool) clusterstatus.Row {
		var r clusterstatus.Row
		r.NodeID, r.State, r.Suffrage, r.ReadReplica = id, client.Role(state), suffrage, replica
		return r
	}
	cs := clusterstatus.Report{Leader: "n2", Nodes: []clusterstatus.Row{
		row("n1", "Follower", "voter", false), row("n2", "Leader", "voter", false), row("n3", "Follower", "voter", false),
		row("r1", "Follower", "learner", true), row("n4", "Follower", "learner", false),
	}}
	plan, voters := Plan(cs)
	var got []string
	for _, s := range plan {
		got = append(got, s.ID+":"+s.Role)
	}
	want := []string{"n4:learner", "r1:read replica", "n1:follower", "n3:follower", "n2:leader"}
	if !slices.Equal(got, want) || voters != 3 {
		t.Fatalf("got %v with %d voters, want %v with 3", got, voters, want)
	}
}

// TestRestartCommandFor: placeholders become single-quoted shell words, quotes included.
func TestRestartCommandFor(t *testing.T) {
	for i, tc := range []struct{ tmpl, id, want string }{
		{"restart {id} {client} {raft}", "n1", "restart 'n1' 'c:1' 'r:2'"},
		{"x {id}", "it's", `x 'it'\''s'`},
		{"no placeholders", "n1", "no placeholders"},
	} {
		if got := CommandFor(tc.tmpl, Step{ID: tc.id, Client: "c:1", Raft: "r:2"}); got != tc.want {
			t.Errorf("#%d: got %q, want %q", i, got, tc.want)
		}
	}
}

// TestRestartPlanMatchesDoc: what `cluster restart-plan` prints, for a restart and for an
// upgrade (--upgrade, --activate), is what docs/operations.md shows after the command
// line it gives, line for line: the plan follows the documented procedure (followers
// first, the leader last after a transfer, then the cluster-wide steps).
func TestRestartPlanMatchesDoc(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	row := func(id, state string) clusterstatus.Row {
		var r clusterstatus.Row
		r.NodeID, r.State, r.Suffrage = id, client.Role(state), "voter"
		r.ClientAddr, r.RaftAddr = "10.0.0."+id[1:]+":8001", "10.0.0."+id[1:]+":7001"
		return r
	}
	cs := clusterstatus.Report{Leader: "n1", Nodes: []clusterstatus.Row{row("n1", "Leader"), row("n2", "Follower"), row("n3", "Follower")}}
	for i, tc := range []struct {
		command string
		upgrade Upgrade
	}{
		{"$ lockstep cluster restart-plan --addr 10.0.0.1:8001", Upgrade{}},
		{"$ lockstep cluster restart-plan --addr 10.0.0.1:8001 --upgrade 2 --activate clicks.count@2",
			Upgrade{Version: 2, Activate: []string{"clicks.count@2"}}},
	} {
		want, ok := docBlockAfter(string(doc), tc.command)
		if !ok {
			t.Fatalf("#%d: docs/operations.md shows no output of %q", i, tc.command)
		}
		var out strings.Builder
		r := New(Config{Out: &out, Upgrade: tc.upgrade})
		plan, _ := Plan(cs)
		r.PrintPlan(plan)
		if got := out.String(); got != want {
			t.Errorf("#%d: %s prints\n%s\ndocs/operations.md shows\n%s", i, tc.command, got, want)
		}
	}
}

// docBlockAfter returns the lines of the indented code block of doc that follow the line
// command in it, unindented, each ending in a newline.
func docBlockAfter(doc, command string) (string, bool) {
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != command || !strings.HasPrefix(l, "    ") {
			continue
		}
		var b strings.Builder
		for _, l := range lines[i+1:] {
			if !strings.HasPrefix(l, "    ") {
				break
			}
			b.WriteString(l[4:] + "\n")
		}
		return b.String(), true
	}
	return "", false
}
