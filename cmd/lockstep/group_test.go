package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// TestCLIGroups runs group list and group describe of the real binary against a
// one-node cluster with a group joined through invoke, in both output formats, and
// their failures.
func TestCLIGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node process")
	}
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 1)
	addrs := c.AddrFlag()
	proctest.MustRun(t, bin, "stream", "create", "events", "--addr", addrs)
	r := proctest.MustRun(t, bin, "group", "list", "--addr", addrs)
	if strings.Contains(r.Stdout, "workers") {
		t.Fatalf("list before any join: %v", r)
	}
	for _, m := range []string{"a", "b"} {
		proctest.MustRun(t, bin, "invoke", "group.join", "--key", "workers", "--args",
			`{"Stream": "events", "Member": "`+m+`", "SessionTimeoutMs": 3600000}`, "--addr", addrs)
	}
	proctest.MustRun(t, bin, "invoke", "group.commit", "--key", "workers", "--args",
		`{"Member": "a", "Generation": 2, "Partition": 2, "Offset": 17}`, "--addr", addrs)
	proctest.CheckFailure(t, proctest.Run(t, bin, "invoke", "group.commit", "--key", "workers", "--args",
		`{"Member": "a", "Generation": 1, "Partition": 0, "Offset": 5}`, "--addr", addrs), "stale consumer group generation")

	r = proctest.MustRun(t, bin, "group", "list", "--addr", addrs)
	for _, want := range []string{"GROUP", "STREAM", "GENERATION", "workers", "events"} {
		if !strings.Contains(r.Stdout, want) {
			t.Fatalf("list table lacks %q: %v", want, r)
		}
	}
	r = proctest.MustRun(t, bin, "group", "describe", "workers", "--addr", addrs)
	for _, want := range []string{"Generation", "MEMBER", "PARTITIONS", "HEARTBEAT", "[0,2]", "[1,3]", "OFFSET", "17"} {
		if !strings.Contains(r.Stdout, want) {
			t.Fatalf("describe table lacks %q: %v", want, r)
		}
	}
	var d builtin.GroupDescription
	if err := json.Unmarshal([]byte(proctest.MustRun(t, bin, "group", "describe", "workers", "-o", "json", "--addr", addrs).Stdout), &d); err != nil ||
		d.Generation != 2 || len(d.Members) != 2 || len(d.Offsets) != 1 || d.Offsets[0].Offset != 17 {
		t.Fatalf("describe json: %+v, %v", d, err)
	}
	proctest.CheckFailure(t, proctest.Run(t, bin, "group", "describe", "nogroup", "--addr", addrs), "unknown consumer group")
	proctest.CheckFailure(t, proctest.Run(t, bin, "group", "describe", "--addr", addrs), "exactly one GROUP")
}
