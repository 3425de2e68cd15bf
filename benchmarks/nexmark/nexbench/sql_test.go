package nexbench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark/feed"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// TestSQLOnThreeNodes: q1 deployed as SQL through the log on three real `lockstep node`
// processes (mutual TLS, fsync on): every event is handled, each replica's CPU time is
// read, the results arrive at the subscriber with a latency, and the view equals the
// batch reference (the check would fail a wrong run: TestSQLAnswerAgainstReference).
func TestSQLOnThreeNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := proctest.BuildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := StartCluster(ctx, ClusterOptions{Bin: bin, Nodes: 3, Partitions: 4, Engine: EngineSQL, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var clients []*client.Client
	for range 2 {
		c, err := cl.Client(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	rep, err := Run(ctx, Config{Query: "q1", Engine: EngineSQL, Clients: clients, Nodes: cl.Nodes(), Check: true, DrainTimeout: 30 * time.Second,
		Feed: feed.Config{Generator: nexmark.Config{Rate: 200}, Events: 3000, Batch: 250, Workers: 2}})
	if err != nil {
		t.Fatalf("%v\n%+v", err, rep)
	}
	if rep.Engine != EngineSQL || rep.Events != 3000 || !rep.Checked || rep.CheckedRows == 0 || rep.Results == 0 || rep.Latency.Count == 0 ||
		len(rep.Replicas) != 3 || rep.EventsPerCore <= 0 || rep.StreamBytes["q1"] == 0 || rep.WindowLatency != nil {
		t.Fatalf("report %+v", rep)
	}
	for _, x := range rep.Replicas {
		if x.CPUSeconds <= 0 || x.DiskBytes == 0 {
			t.Fatalf("replica %+v", x)
		}
	}
}

// TestSQLAnswerAgainstReference: the reference's rows, written as a view's changelog
// (inserts, an update and a delete spread over partitions), reduce to the reference;
// a changed, missing or extra row, or a drain row, does not.
func TestSQLAnswerAgainstReference(t *testing.T) {
	views, _ := nexmark.SQLText("q1")
	art, err := sql.Compile(nexmark.SQLStreamsText("1 second")+views, sql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := &art.Plan.Views[0]
	g, _ := nexmark.New(nexmark.Config{Rate: 200})
	evs, _ := g.Slice(0, 500)
	ref := nexmark.RefQ1(evs)
	want, err := projectReference(v, ref)
	if err != nil || len(want) == 0 {
		t.Fatal(err, len(want))
	}
	rec := func(op byte, k int, r nexmark.Q1Row, at int64) kept {
		return kept{key: []byte{byte(k >> 8), byte(k)}, value: append([]byte{op}, plan.AppendRow(nil, []any{r.Auction, r.Bidder, r.Price, r.DateTime, r.Extra})...), time: at}
	}
	build := func(mut func(parts map[int][]kept)) map[int][]kept {
		parts := map[int][]kept{}
		for i, r := range ref {
			parts[i%3] = append(parts[i%3], rec(plan.ChangeInsert, i, r, r.DateTime))
		}
		mut(parts)
		return parts
	}
	bad := ref[0]
	bad.Price++
	for name, c := range map[string]struct {
		mut   func(map[int][]kept)
		equal bool
	}{
		"as written": {func(map[int][]kept) {}, true},
		"updated back": {func(p map[int][]kept) {
			p[0] = append(p[0], rec(plan.ChangeUpdate, 0, bad, 1), rec(plan.ChangeUpdate, 0, ref[0], 1))
		}, true},
		"deleted":         {func(p map[int][]kept) { p[0] = append(p[0], rec(plan.ChangeDelete, 0, ref[0], 1)) }, false},
		"changed":         {func(p map[int][]kept) { p[0] = append(p[0], rec(plan.ChangeUpdate, 0, bad, 1)) }, false},
		"extra":           {func(p map[int][]kept) { p[1] = append(p[1], rec(plan.ChangeInsert, 99999, ref[1], 1)) }, false},
		"extra, drain":    {func(p map[int][]kept) { p[1] = append(p[1], rec(plan.ChangeInsert, 99999, ref[1], 1<<50)) }, true},
		"extra, same key": {func(p map[int][]kept) { p[2] = append(p[2], rec(plan.ChangeInsert, 2, ref[2], 1)) }, true},
	} {
		got, err := sqlAnswer(v, build(c.mut), 1<<49)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if eq := equalRows(got, want); eq != c.equal {
			t.Errorf("%s: equal %v, want %v (%s)", name, eq, c.equal, firstDiffRows(got, want))
		}
	}
	if _, err := sqlAnswer(v, map[int][]kept{0: {{key: []byte("k"), value: []byte("X")}}}, 1<<49); err == nil {
		t.Error("a bad changelog record: no error")
	}
	if _, err := projectReference(v, nexmark.RefQ2(evs)); !errors.Is(err, ErrBadConfig) {
		t.Errorf("q1's view against q2's rows: %v, want ErrBadConfig (no column bidder)", err)
	}
}

func equalRows(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
