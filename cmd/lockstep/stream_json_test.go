package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/partition"
)

// readJSONLines reads every partition of stream with stream read -o json and extra flags.
func readJSONLines(t *testing.T, bin, addrs, stream string, parts int, extra ...string) []recordJSON {
	t.Helper()
	var out []recordJSON
	for p := range parts {
		args := append([]string{"stream", "read", stream, "-p", strconv.Itoa(p), "-o", "json", "--addr", addrs}, extra...)
		r := proctest.MustRun(t, bin, args...)
		for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
			if line == "" {
				continue
			}
			var rec recordJSON
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("read %s: line %q: %v", stream, line, err)
			}
			out = append(out, rec)
		}
	}
	return out
}

// TestCLIStreamJSON feeds and reads the built-in click pipeline with the real binary,
// values as JSON: only demo.clicks is created (the processors create their outputs);
// clicks go in from the command line and as JSON lines on stdin; the repartitioned
// clicks and the dead letter of a bad click come out as JSON of their types; a stream
// read's output fed to stream append makes an equal copy; bad values and types fail
// clearly, appending nothing (DESIGN.md invariant 7).
func TestCLIStreamJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node process")
	}
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 1)
	addrs := c.AddrFlag()
	const parts = 4
	proctest.MustRun(t, bin, "stream", "create", "demo.clicks", "--addr", addrs)

	r := proctest.MustRun(t, bin, "stream", "append", "demo.clicks", "--key", "alice", "--event-time", "2023-11-14T22:13:20.5Z",
		`{"Page": "/home", "Time": 1700000000000}`, "--addr", addrs)
	if strings.TrimSpace(r.Stdout) != "0" {
		t.Fatalf("append: %v", r)
	}
	proctest.CheckFailure(t, proctest.Run(t, bin, "stream", "append", "demo.clicks", "--key", "alice", `{"Nope": 1}`, "--addr", addrs), "unknown field")
	proctest.CheckFailure(t, proctest.Run(t, bin, "stream", "append", "demo.clicks", "--key", "alice", `{"Page": 7}`, "--addr", addrs), "wrong type")
	proctest.CheckFailure(t, proctest.Run(t, bin, "stream", "append", "demo.clicks", "--value-type", "nope", "--key", "a", "{}", "--addr", addrs), `--value-type "nope"`)
	proctest.CheckFailure(t, proctest.Run(t, bin, "stream", "append", "demo.clicks", `{"Page": "/x"}`, "--addr", addrs), "non-empty --key")
	stdin := `{"key_text": "bob", "value": {"Page": "/cart", "User": "bob@example"}, "event_time": 1700000001000}

{"key_text": "carol", "value": {"Page": ""}, "event_time": "2023-11-14T22:13:22Z"}
`
	r = proctest.RunInput(t, bin, stdin, "stream", "append", "demo.clicks", "-o", "json", "--addr", addrs)
	var offs []uint64
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &offs) != nil || len(offs) != 2 {
		t.Fatalf("append from stdin: %v", r)
	}
	proctest.CheckFailure(t, proctest.RunInput(t, bin, `{"key_text": "dave", "valu": {}}`, "stream", "append", "demo.clicks", "--addr", addrs), "stdin line 1")
	proctest.CheckFailure(t, proctest.RunInput(t, bin, "{\"key_text\": \"a\", \"value\": {\"Page\": \"/a\"}}\n{\"value\": {\"Page\": \"/b\"}}\n",
		"stream", "append", "demo.clicks", "--addr", addrs), "stdin line 2: no key")

	// The repartitioner turns alice's and bob's clicks into demo.clicks.by_page (created
	// for it) and carol's, which has no page, into a dead letter.
	var byPage []recordJSON
	testutil.WaitFor(t, 30*time.Second, func() error {
		if byPage = readJSONLines(t, bin, addrs, "demo.clicks.by_page", parts); len(byPage) != 2 {
			return fmt.Errorf("demo.clicks.by_page holds %d records, want 2", len(byPage))
		}
		return nil
	})
	got := map[string]string{}
	for _, rec := range byPage {
		// The repartitioner stamps each record with the exchange watermark it was emitted
		// under (builtin.Click.Watermark; procedures' tests check its value): present,
		// and left out of the comparison.
		v, ok := rec.Value.(map[string]any)
		if _, stamped := v["Watermark"]; !ok || !stamped {
			t.Fatalf("demo.clicks.by_page record %v: want a value with its Watermark stamp", rec.Value)
		}
		delete(v, "Watermark")
		b, _ := json.Marshal(v)
		got[*rec.KeyText] = string(b) + " " + rec.EventTime
	}
	want := map[string]string{
		"/home": `{"Page":"/home","Time":1700000000000,"User":"alice"} 2023-11-14T22:13:20.000Z`,
		"/cart": `{"Page":"/cart","Time":1700000001000,"User":"bob@example"} 2023-11-14T22:13:21.000Z`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("demo.clicks.by_page:\n got %v\nwant %v", got, want)
	}
	var dead []recordJSON
	testutil.WaitFor(t, 30*time.Second, func() error {
		if dead = readJSONLines(t, bin, addrs, "demo.clicks.dead", parts); len(dead) != 1 {
			return fmt.Errorf("demo.clicks.dead holds %d records, want 1", len(dead))
		}
		return nil
	})
	if b, _ := json.Marshal(dead[0].Value); !strings.Contains(string(b), `"Processor":"demo.clicks.by_page"`) ||
		!strings.Contains(string(b), "bad click") || *dead[0].KeyText != "carol" {
		t.Fatalf("dead letter: %s (%+v)", b, dead[0])
	}

	// The table shows values as JSON too.
	part := strconv.Itoa(partition.PartitionOf([]byte("alice"), parts))
	if r := proctest.MustRun(t, bin, "stream", "read", "demo.clicks", "-p", part, "--addr", addrs); !strings.Contains(r.Stdout, `{"Page":"/home","Time":1700000000000}`) {
		t.Fatalf("read table: %v", r)
	}

	// Round trip: stream read's JSON lines, fed to stream append, make an equal copy.
	proctest.MustRun(t, bin, "stream", "create", "copy", "--addr", addrs)
	orig := readJSONLines(t, bin, addrs, "demo.clicks", parts)
	var lines strings.Builder
	for _, rec := range orig {
		b, _ := json.Marshal(rec)
		lines.Write(append(b, '\n'))
	}
	if r := proctest.RunInput(t, bin, lines.String(), "stream", "append", "copy", "--value-type", "click", "--addr", addrs); r.Code != 0 {
		t.Fatalf("append copy: %v", r)
	}
	dup := readJSONLines(t, bin, addrs, "copy", parts)
	if len(dup) != len(orig) || len(orig) != 3 {
		t.Fatalf("copy holds %d records, the original %d (want 3)", len(dup), len(orig))
	}
	for _, rec := range dup {
		if rec.Value != nil {
			t.Fatalf("copy's values decoded without --value-type: %+v", rec)
		}
	}
	dupTyped := map[string]recordJSON{}
	for _, rec := range readJSONLines(t, bin, addrs, "copy", parts, "--value-type", "click") {
		dupTyped[*rec.KeyText] = rec
	}
	for _, o := range orig {
		d := dupTyped[*o.KeyText]
		if !bytes.Equal(d.Data, o.Data) || d.EventTime != o.EventTime || !reflect.DeepEqual(d.Value, o.Value) || d.Partition != o.Partition {
			t.Fatalf("copy of %s: %+v, original %+v", *o.KeyText, d, o)
		}
	}
}
