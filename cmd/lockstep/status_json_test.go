package main

import (
	"encoding/json"
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
	got, err := json.Marshal(newStatusJSON(c))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("cluster status JSON\n got %s\nwant %s", got, want)
	}
	// A node that did not answer: only its address.
	want, _ = json.Marshal(node.StatusJSON{Status: wire.Status{ClientAddr: "a:1"}})
	got, _ = json.Marshal(statusJSON{Status: client.Status{ClientAddr: "a:1"}})
	if string(got) != string(want) {
		t.Fatalf("unreachable row JSON\n got %s\nwant %s", got, want)
	}
}
