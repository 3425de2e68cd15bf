package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark/nexbench"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
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
		{[]string{"--query", "q1"}, "--query needs a cluster"},
		{[]string{"--query", "q1", "--nodes", "10"}, "--nodes 10"},
		{[]string{"--query", "q1", "--nodes", "1", "--embedded", "1"}, "give one of --nodes"},
		{[]string{"--generate", "--append", "--nodes", "1"}, "--nodes starts bench nodes"},
		{[]string{"--generate", "--append", "--embedded", "1", "--check"}, "go with --query"},
		{[]string{"--query", "q1", "--embedded", "1", "--node-cpuprofile", "x"}, "--node-cpuprofile goes with --nodes"},
		{[]string{"--query", "q1", "--embedded", "1", "--node-pid", "1"}, "--node-pid goes with"},
		{[]string{"--query", "q1", "--nodes", "1", "--pace", "-5"}, "pace -5"},
		{[]string{"--query", "q1", "--engine", "spark", "--embedded", "1"}, "--engine \"spark\""},
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

// TestBenchNexmarkQuery: a query run on an in-process cluster appends every event,
// waits for the query's processors to handle them all, and its result equals the batch
// reference (--check).
func TestBenchNexmarkQuery(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded cluster")
	}
	for _, q := range []string{"q0", "q7"} { // one processor named after the query; several
		out, errOut, err := runBenchApp(t, "nexmark", "--query", q, "--embedded", "1", "--events", "3000", "--batch", "200", "-o", "json",
			"--rate", "200", "--timeout", "30s", "--check")
		if err != nil {
			t.Fatalf("%s: %v\n%s%s", q, err, out, errOut)
		}
		var r nexbench.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if r.Query != q || r.Events != 3000 || r.Batches < 15 || r.Rate <= 0 || r.DrainedS < r.AppendS || !r.Checked || r.CheckedRows == 0 {
			t.Fatalf("report %+v", r)
		}
	}
}

// TestBenchNexmarkProcesses: `bench nexmark --query qN --nodes N` against real node
// processes (TLS, fsync): every query's result equals the batch reference (--check, so
// a fast but wrong run fails), and the report has each replica's CPU time from /proc,
// the result latency from the subscriber and the chart.
func TestBenchNexmarkProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := proctest.BuildBinary(t)
	for _, c := range []struct {
		q     string
		nodes int
	}{{"q0", 1}, {"q3", 1}, {"q5", 1}, {"q7", 3}, {"q8", 1}} {
		chartFile := filepath.Join(t.TempDir(), "chart.svg")
		// 4000 events at 200 events/s of event time: 20 s, two 10 s windows of q7.
		res := proctest.RunWithin(t, 3*time.Minute, bin, "bench", "nexmark", "--query", c.q, "--nodes", itoa(int64(c.nodes)),
			"--events", "4000", "--rate", "200", "--batch", "250", "--workers", "2", "--check", "--timeout", "60s", "-o", "json", "--chart", chartFile)
		if res.Code != 0 {
			t.Fatalf("%s: %v", c.q, res)
		}
		var r nexbench.Report
		if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil {
			t.Fatalf("%s: %v\n%s", c.q, err, res)
		}
		if r.Query != c.q || r.Nodes != c.nodes || r.Events != 4000 || !r.Checked || r.CheckedRows == 0 || r.Rate <= 0 ||
			len(r.Replicas) != c.nodes || r.EventsPerCore <= 0 || r.Results == 0 || r.Latency.Count == 0 || r.StreamBytes["bid"] == 0 {
			t.Fatalf("%s: report %+v", c.q, r)
		}
		for _, x := range r.Replicas {
			if x.Pid == 0 || x.CPUSeconds <= 0 || x.RSSBytes == 0 || x.DiskBytes == 0 {
				t.Fatalf("%s: replica %+v", c.q, x)
			}
		}
		if svg, err := os.ReadFile(chartFile); err != nil || !strings.Contains(string(svg), "<svg") {
			t.Fatalf("%s: chart: %v %.100s", c.q, err, svg)
		}
	}
}

// TestBenchNexmarkPlainNodes: --query against a cluster of plain `lockstep node`
// processes, which do not carry the Nexmark processors, is refused with a clear error
// before anything is appended.
func TestBenchNexmarkPlainNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 1)
	res := proctest.RunWithin(t, time.Minute, bin, "bench", "nexmark", "--query", "q0", "--addr", c.AddrFlag(),
		"--certs-dir", proctest.SharedCerts(), "--events", "100")
	if res.Code == 0 || !strings.Contains(res.Stderr, "runs no processor of q0") || !strings.Contains(res.Stderr, "nexmark-node") {
		t.Fatalf("want a refusal naming the bench node: %v", res)
	}
}
