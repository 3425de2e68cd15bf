package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
)

// TestBenchNexmarkGenerate: --generate prints the generator's events, any slice alike:
// JSON lines that decode to the events, or a table of one line per event.
func TestBenchNexmarkGenerate(t *testing.T) {
	g, err := nexmark.New(nexmark.Config{OutOfOrderGroup: 7, Seed: 5, Rate: 500})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range [][2]int64{{0, 60}, {13, 40}} {
		out, errOut, err := runBenchApp(t, "nexmark", "--generate", "--from", itoa(s[0]), "--events", itoa(s[1]-s[0]),
			"--out-of-order-group", "7", "--seed", "5", "--rate", "500", "-o", "json")
		if err != nil {
			t.Fatalf("#%d: %v\n%s", i, err, errOut)
		}
		want, _ := g.Slice(s[0], s[1])
		var got []nexmark.Event
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var e nexmark.Event
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("#%d: line %q: %v", i, line, err)
			}
			e.Kind = map[bool]nexmark.Kind{true: nexmark.KindPerson}[e.Person != nil]
			if e.Auction != nil {
				e.Kind = nexmark.KindAuction
			} else if e.Bid != nil {
				e.Kind = nexmark.KindBid
			}
			got = append(got, e)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("#%d: printed events differ from the generator's slice %v", i, s)
		}
	}
	out, _, err := runBenchApp(t, "nexmark", "--generate", "--events", "50")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 51 || !strings.HasPrefix(lines[1], "0 ") ||
		!strings.Contains(lines[50], "bid") {
		t.Fatalf("table: %d lines, want a header and 50 events:\n%.500s", len(lines), out)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestBenchNexmarkBadFlags: each mistake is a clear error before anything starts or
// prints (DESIGN.md invariant 7, for the CLI).
func TestBenchNexmarkBadFlags(t *testing.T) {
	for i, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "give --generate"},
		{[]string{"--generate", "--query", "q1"}, "give --generate"},
		{[]string{"--append"}, "give --generate"},
		{[]string{"--query", "q6", "--embedded", "1"}, "--query \"q6\""},
		{[]string{"--query", "q1"}, "--query needs --embedded"},
		{[]string{"--query", "q1", "--engine", "sql", "--embedded", "1"}, "--engine \"sql\""},
		{[]string{"--generate", "--embedded", "1"}, "add --append"},
		{[]string{"--generate", "--rate", "0"}, "--rate 0"},
		{[]string{"--generate", "--events", "0"}, "events 0"},
		{[]string{"--generate", "--out-of-order-group", "0"}, "--out-of-order-group 0"},
		{[]string{"--generate", "--batch", "0"}, "--batch 0"},
		{[]string{"--generate", "--append", "--embedded", "1", "--workers", "0"}, "--workers 0"},
		{[]string{"--generate", "-o", "yaml"}, "--output \"yaml\""},
		{[]string{"--generate", "extra"}, "takes no arguments"},
	} {
		out, _, err := runBenchApp(t, append([]string{"nexmark"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || out != "" {
			t.Errorf("#%d: %v: got %v (output %.200q), want an error containing %q", i, c.args, err, out, c.want)
		}
	}
}

// TestBenchNexmarkQuery: a query run on an embedded cluster appends every event and
// waits for the query's processors to handle them all.
func TestBenchNexmarkQuery(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded cluster")
	}
	for _, q := range []string{"q0", "q7"} { // one processor named after the query; several
		out, errOut, err := runBenchApp(t, "nexmark", "--query", q, "--embedded", "1", "--events", "3000", "--batch", "200", "-o", "json",
			"--timeout", "20s")
		if err != nil {
			t.Fatalf("%s: %v\n%s", q, err, errOut)
		}
		var r nexmarkReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if r.Query != q || r.Events != 3000 || r.Batches < 15 || r.Rate <= 0 || r.DrainedS < r.AppendS {
			t.Fatalf("report %+v", r)
		}
	}
}
