package clusterstatus

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/node"
)

// TestStatusJSONKeys checks that the CLI's JSON form of a client.Status is, key for key
// and in the same order, the node's /status JSON (node.StatusJSON) of the same wire
// status: `cluster status --output json` prints what it printed when it used the latter.
func TestStatusJSONKeys(t *testing.T) {
	var w wire.Status
	var c client.Status
	testutil.Fill(&w)
	testutil.Fill(&c)
	want, err := json.Marshal(node.NewStatusJSON(w))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(NewStatusJSON(c))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("cluster status JSON\n got %s\nwant %s", got, want)
	}
	// A node that did not answer: only its address.
	want, _ = json.Marshal(node.StatusJSON{Status: wire.Status{ClientAddr: "a:1"}})
	got, _ = json.Marshal(StatusJSON{Status: client.Status{ClientAddr: "a:1"}})
	if string(got) != string(want) {
		t.Fatalf("unreachable row JSON\n got %s\nwant %s", got, want)
	}
}

// TestHashSummaryIncompatible: a node incompatible with the cluster (another procedure
// set) applies none of its log, so the hash line does not call the replicas divergent
// for its hashes; it says the node was not compared (issue 20 item 10). A replica that
// does apply the log and differs is still reported.
func TestHashSummaryIncompatible(t *testing.T) {
	row := func(id string, hashes []string, incompatible string) Row {
		var r Row
		r.NodeID, r.AppliedIndex, r.Hashes, r.Incompatible = id, 10, hashes, incompatible
		return r
	}
	same, other := []string{"aa", "bb"}, []string{"00", "00"}
	for i, tc := range []struct {
		rows      []Row
		want, not string
	}{
		{[]Row{row("n1", same, ""), row("n2", same, ""), row("n3", other, "procedure set differs")},
			"not compared: n3", "DIFFER"},
		{[]Row{row("n1", same, ""), row("n2", same, ""), row("n3", other, "")}, "DIFFER", "not compared"},
		{[]Row{row("n1", same, ""), row("n2", same, "")}, "2 replicas at applied index 10: state hashes equal", "DIFFER"},
	} {
		if got := HashSummary(tc.rows); !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
			t.Errorf("#%d: got %q, want %q and not %q", i, got, tc.want, tc.not)
		}
	}
}
