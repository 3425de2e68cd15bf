package main

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/partition"
)

// TestCLIStreamTail follows every partition of a stream with the real binary: from the end
// by default (a record appended before the tail began is not printed), from the first
// retained record with --from-beginning, records of two partitions as they arrive, a clean
// exit on SIGINT, and a clear failure for a stream that does not exist. Records are
// pushed (a subscription), not polled.
func TestCLIStreamTail(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node process")
	}
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 1)
	addrs := c.AddrFlag()
	const stream = "tailed"
	// Two keys of different partitions.
	keyA, keyB := "a", ""
	for i := 0; keyB == ""; i++ {
		if k := "b" + strconv.Itoa(i); partition.PartitionOf([]byte(k), 4) != partition.PartitionOf([]byte(keyA), 4) {
			keyB = k
		}
	}
	appendRec := func(key, value string) {
		t.Helper()
		rec := base64.StdEncoding.EncodeToString([]byte(value))
		proctest.MustRun(t, bin, "invoke", "stream.append", "--key", key, "--args", `{"Stream": "`+stream+`", "Record": "`+rec+`"}`, "--addr", addrs)
	}
	proctest.CheckFailure(t, proctest.Run(t, bin, "stream", "tail", "missing", "--addr", addrs), "unknown stream")
	proctest.MustRun(t, bin, "stream", "create", stream, "--addr", addrs)
	appendRec(keyA, "before")

	tail := startFollow(t, bin, "stream", "tail", stream, "--addr", addrs)
	next := func(what string) string {
		t.Helper()
		select {
		case line := <-tail.lines:
			return line
		case <-time.After(proctest.CommandTimeout):
			t.Fatalf("tail printed no %s", what)
			return ""
		}
	}
	if h := next("header"); !strings.Contains(h, "PARTITION") {
		t.Fatalf("header %q", h)
	}
	appendRec(keyA, "after-a")
	appendRec(keyB, "after-b")
	got := map[string]string{}
	for range 2 {
		f := strings.Fields(next("record"))
		got[f[len(f)-1]] = f[0]
	}
	for key, value := range map[string]string{keyA: "after-a", keyB: "after-b"} {
		if p := strconv.Itoa(partition.PartitionOf([]byte(key), 4)); got[value] != p {
			t.Errorf("tail: %q in partition %q, want %s (all: %v)", value, got[value], p, got)
		}
	}
	if code := tail.interrupt(t); code != 0 {
		t.Fatalf("tail exited %d on SIGINT, want 0", code)
	}

	from := startFollow(t, bin, "stream", "tail", stream, "--from-beginning", "-o", "json", "--addr", addrs)
	values := map[string]bool{}
	for range 3 {
		var rec recordJSON
		select {
		case line := <-from.lines:
			if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Stream != stream {
				t.Fatalf("json line %q: %v", line, err)
			}
		case <-time.After(proctest.CommandTimeout):
			t.Fatalf("--from-beginning printed %d of 3 records", len(values))
		}
		values[string(rec.Data)] = true
	}
	if !values["before"] || !values["after-a"] || !values["after-b"] {
		t.Fatalf("--from-beginning: got %v", values)
	}
	from.interrupt(t)
}
