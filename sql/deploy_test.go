package sql_test

import (
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/testutil/sqltest"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
	"github.com/vmihailenco/msgpack/v5"
)

// logFSM is a replica FSM at cluster version 3 that SQL is deployed to through the log,
// as "sql" modules (replica/sqlmodules.go), the way a leader proposes them.
type logFSM struct {
	t     testing.TB
	f     *replica.FSM
	parts int
	index uint64
	now   int64
}

func newLogFSM(t testing.TB, parts int) *logFSM {
	t.Helper()
	return newLogFSMAt(t, parts, 0)
}

// newLogFSMAt is newLogFSM bootstrapped at cluster version v (0: this binary's newest).
func newLogFSMAt(t testing.TB, parts int, v uint64) *logFSM {
	t.Helper()
	reg := procedures.Builtins()
	f, err := replica.New(replica.Config{Partitions: parts}, reg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	info := batch.ClusterInfo{ClusterID: "c", Partitions: parts, Procedures: reg.Fingerprint()}
	replica.BootstrapInfo(replica.Config{MaxClusterVersion: v}, reg, &info)
	args, _ := msgpack.Marshal(&info)
	l := &logFSM{t: t, f: f, parts: parts, now: 1_700_000_000_000 * 1e6}
	if err := l.apply(batch.Item{Kind: batch.KindInitCluster, Args: args}); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l *logFSM) apply(items ...batch.Item) error {
	l.index++
	l.now += 1e6
	e := batch.Entry{Time: l.now, Items: items}
	out := l.f.ApplyBatch([]*raft.Log{{Index: l.index, Type: raft.LogCommand, Data: batch.AppendEntry(nil, &e)}})
	if res, ok := out[0].(*batch.Results); ok && res != nil {
		for _, r := range res.Items {
			if r.Err != nil {
				return r.Err
			}
		}
	}
	return nil
}

func (l *logFSM) catalog() []plan.Schema {
	var out []plan.Schema
	for _, m := range l.f.SQLModules() {
		out = append(out, m.Plan.Schemas()...)
	}
	return out
}

// deploy compiles text as the leader does and applies the deploy through the log.
func (l *logFSM) deploy(name, text string) error {
	return l.deployFor(name, text, replica.SQLPlanVersion(l.f.Deployment().Effective()))
}

// deployFor is deploy with text compiled for plan format planVersion, as a node of a
// newer cluster would.
func (l *logFSM) deployFor(name, text string, planVersion int) error {
	part := l.f.Engine().Partitions()[0]
	art, err := sql.Compile(text, sql.Options{Catalog: l.catalog(), Exists: func(n string) bool {
		_, ok := part.StreamInfo(n)
		return ok
	}, PlanVersion: planVersion})
	if err != nil {
		return err
	}
	b, err := art.Encode()
	if err != nil {
		return err
	}
	src, err := replica.EncodeSQLSource(text, b)
	if err != nil {
		return err
	}
	return l.config(batch.ConfigChange{Cmd: "deploy-module", Module: name, Kind: replica.ModuleKindSQL, Source: src})
}

func (l *logFSM) config(c batch.ConfigChange) error {
	args, _ := msgpack.Marshal(&c)
	return l.apply(batch.Item{Kind: batch.KindClusterConfig, Args: args})
}

func (l *logFSM) insert(text string) {
	l.t.Helper()
	recs, err := sql.EncodeInsert(text, l.catalog())
	if err != nil {
		l.t.Fatal(err)
	}
	for _, a := range recs {
		if err := l.apply(sqltest.AppendItem(a, l.parts)); err != nil {
			l.t.Fatal(err)
		}
	}
}

func (l *logFSM) query(text string) []string {
	l.t.Helper()
	q, err := sql.CompileQuery(text, l.catalog())
	if err != nil {
		l.t.Fatal(err)
	}
	var scanners []plan.Scanner
	for _, p := range l.f.Engine().Partitions() {
		scanners = append(scanners, p)
	}
	rows, err := q.Run(scanners)
	if err != nil {
		l.t.Fatal(err)
	}
	return rowsText(rows)
}

// A stream and a view deployed as "sql" modules through the log: the replica creates the
// stream at the deploy's index and runs the plan it decodes; a view over a stream that a
// removal would drop is refused by name, and so is every bad deploy, changing nothing.
func TestDeploySQLThroughLog(t *testing.T) {
	l := newLogFSM(t, 4)
	if err := l.deploy("clicks", `CREATE STREAM clicks (usr text, page text, ts timestamp, n bigint)
  WITH (key = 'usr', event_time = 'ts', out_of_orderness = '1 second', idle_timeout = '2 seconds');`); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.f.Engine().Partitions()[3].StreamInfo("clicks"); !ok {
		t.Fatal("the deploy did not create stream clicks")
	}
	if err := l.deploy("per_page", `CREATE MATERIALIZED VIEW per_page AS
  SELECT page, count(*) AS clicks, sum(n) AS total FROM clicks WHERE n > 0 GROUP BY page;`); err != nil {
		t.Fatal(err)
	}
	l.insert(clicksRows)
	l.apply(batch.Item{Kind: batch.KindTick}) // the exchange delivers the last row's group
	if got, want := l.query("SELECT page, clicks, total FROM per_page ORDER BY page"), []string{"cart 1 3", "home 3 8"}; !slices.Equal(got, want) {
		t.Fatalf("per_page: got %q, want %q", got, want)
	}

	before := l.f.StateHashes()
	dep := l.f.Deployment()
	unchanged := func(what string) {
		t.Helper()
		after := l.f.StateHashes()
		// The meta hash covers the applied index and batch time, which every entry moves.
		if !slices.Equal(after.Hashes, before.Hashes) {
			t.Fatalf("%s changed the state: %v %x -> %v %x", what, before.Hashes, before.Meta, after.Hashes, after.Meta)
		}
		if d := l.f.Deployment(); !reflect.DeepEqual(d, dep) {
			t.Fatalf("%s changed the deployment", what)
		}
	}
	// The view over clicks blocks the removal of clicks, by name.
	err := l.config(batch.ConfigChange{Cmd: "remove-module", Module: "clicks"})
	if !errors.Is(err, replica.ErrBadModule) || !strings.Contains(err.Error(), "view per_page") {
		t.Fatalf("remove clicks under per_page: got %v", err)
	}
	// Replicas check again on apply: a plan over a stream that does not exist (as a
	// leader with a stale catalogue would propose) is refused, and no stream is created.
	art, err := sql.Compile(`CREATE STREAM s2 (k text) WITH (key = 'k');
CREATE MATERIALIZED VIEW v2 AS SELECT k FROM s2;`, sql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	art.Plan.Views[0].Input.Name = "nosuch"
	b, _ := art.Encode()
	src, _ := replica.EncodeSQLSource(art.SQL, b)
	err = l.config(batch.ConfigChange{Cmd: "deploy-module", Module: "bad", Kind: replica.ModuleKindSQL, Source: src})
	if !errors.Is(err, replica.ErrBadModule) {
		t.Fatalf("deploy over a missing stream: got %v", err)
	}
	if _, ok := l.f.Engine().Partitions()[0].StreamInfo("s2"); ok {
		t.Fatal("a refused deploy created its stream")
	}
	// A second deploy of a stream that exists.
	b2, _ := mustCompile(t, `CREATE STREAM s3 (k text) WITH (key = 'k');`).Encode()
	src, _ = replica.EncodeSQLSource("x", b2)
	if err := l.config(batch.ConfigChange{Cmd: "deploy-module", Module: "s3", Kind: replica.ModuleKindSQL, Source: src}); err != nil {
		t.Fatal(err)
	}
	before, dep = l.f.StateHashes(), l.f.Deployment()
	err = l.config(batch.ConfigChange{Cmd: "deploy-module", Module: "s3b", Kind: replica.ModuleKindSQL, Source: src})
	if !errors.Is(err, replica.ErrBadModule) || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("deploy of an existing stream: got %v", err)
	}
	// A plan that does not decode.
	src, _ = replica.EncodeSQLSource("x", []byte{0xc1})
	if err := l.config(batch.ConfigChange{Cmd: "deploy-module", Module: "junk", Kind: replica.ModuleKindSQL, Source: src}); !errors.Is(err, replica.ErrBadModule) {
		t.Fatalf("deploy of a bad plan: got %v", err)
	}
	unchanged("refused deploys")

	// Removing the view, then the stream, works; from cluster version 5 the stream goes
	// with its module (TestDropFreesNamesFromVersion5).
	if err := l.config(batch.ConfigChange{Cmd: "remove-module", Module: "per_page"}); err != nil {
		t.Fatal(err)
	}
	if err := l.config(batch.ConfigChange{Cmd: "remove-module", Module: "clicks"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range l.catalog() {
		if s.Name == "clicks" || s.Name == "per_page" {
			t.Fatalf("catalog still holds %s", s.Name)
		}
	}
	if _, ok := l.f.Engine().Partitions()[0].StreamInfo("clicks"); ok {
		t.Fatal("stream clicks exists after its removal")
	}
	_ = partition.ScanOptions{}
}

// TestDropFreesNamesFromVersion5: at cluster version 4 removing a "sql" module leaves its
// streams, tables and positions (a stream's records stay, its name stays taken), as
// before version 5 existed; from version 5 the removal deletes them, so the names are
// free and a view created again under its name with another definition starts from its
// input's first record, with none of the old view's rows; a table created again starts
// empty.
func TestDropFreesNamesFromVersion5(t *testing.T) {
	const stream = `CREATE STREAM clicks (usr text, page text, ts timestamp, n bigint)
  WITH (key = 'usr', event_time = 'ts', out_of_orderness = '1 second', idle_timeout = '2 seconds');`
	const view = `CREATE MATERIALIZED VIEW per_page AS SELECT page, count(*) AS clicks FROM clicks GROUP BY page;`
	records := func(l *logFSM, name string) int {
		n := 0
		for _, p := range l.f.Engine().Partitions() {
			if _, ok := p.StreamInfo(name); !ok {
				return -1
			}
			recs, _, _ := p.ReadStream(name, 0, 100)
			n += len(recs)
		}
		return n
	}
	for _, v := range []uint64{4, 5} {
		l := newLogFSMAt(t, 4, v)
		for _, d := range [][2]string{{"clicks", stream}, {"per_page", view}, {"users", `CREATE TABLE users (id text, name text) WITH (key = 'id');`}} {
			if err := l.deploy(d[0], d[1]); err != nil {
				t.Fatalf("v%d: %v", v, err)
			}
		}
		l.insert(clicksRows)
		l.insert(`INSERT INTO users VALUES ('u1', 'ann')`)
		l.apply(batch.Item{Kind: batch.KindTick})
		if got := l.query("SELECT page, clicks FROM per_page ORDER BY page"); len(got) != 2 {
			t.Fatalf("v%d: per_page %q", v, got)
		}
		// The view dropped and defined again under its name, over the same stream.
		if err := l.config(batch.ConfigChange{Cmd: "remove-module", Module: "per_page"}); err != nil {
			t.Fatal(err)
		}
		again := l.deploy("per_page", `CREATE MATERIALIZED VIEW per_page AS SELECT page, sum(n) AS total FROM clicks WHERE n > 0 GROUP BY page;`)
		if err := l.config(batch.ConfigChange{Cmd: "remove-module", Module: "users"}); err != nil {
			t.Fatal(err)
		}
		againTable := l.deploy("users", `CREATE TABLE users (id text, score bigint) WITH (key = 'id');`)
		if v == 4 {
			if again == nil || againTable == nil || records(l, "clicks") != 5 || records(l, "per_page") < 0 {
				t.Fatalf("v4: names freed (%v, %v) or records gone (%d)", again, againTable, records(l, "clicks"))
			}
			continue
		}
		if again != nil || againTable != nil {
			t.Fatalf("v5: recreating per_page: %v; users: %v", again, againTable)
		}
		l.apply(batch.Item{Kind: batch.KindTick})
		if got, want := l.query("SELECT page, total FROM per_page ORDER BY page"), []string{"cart 3", "home 8"}; !slices.Equal(got, want) {
			t.Fatalf("v5: recreated per_page: got %q, want %q", got, want)
		}
		if got := l.query("SELECT id, score FROM users"); len(got) != 0 {
			t.Fatalf("v5: recreated users holds %q", got)
		}
		if err := l.config(batch.ConfigChange{Cmd: "remove-module", Module: "per_page"}); err != nil {
			t.Fatal(err)
		}
		if err := l.config(batch.ConfigChange{Cmd: "remove-module", Module: "clicks"}); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"clicks", "per_page", "per_page.by_key", "per_page.late"} {
			if n := records(l, s); n != -1 {
				t.Fatalf("v5: stream %s left with %d records", s, n)
			}
		}
		if err := l.deploy("clicks", stream); err != nil || records(l, "clicks") != 0 {
			t.Fatalf("v5: clicks created again: %v, %d records", err, records(l, "clicks"))
		}
	}
}

func mustCompile(t testing.TB, text string) *sql.Artifact {
	t.Helper()
	return mustCompileFor(t, text, 0)
}

// mustCompileFor compiles text for a cluster of plan format planVersion (0: the newest).
func mustCompileFor(t testing.TB, text string, planVersion int) *sql.Artifact {
	t.Helper()
	art, err := sql.Compile(text, sql.Options{PlanVersion: planVersion})
	if err != nil {
		t.Fatal(err)
	}
	return art
}

// TestPlanFormat3NeedsVersion4: at cluster version 3 a script whose plan needs format 3
// (a view over a view: Nexmark q5) is refused with ErrNeedsVersion and nothing deployed,
// since binaries of version 3 decode formats 1 and 2 only; a format-2 script deploys; at
// version 4 the format-3 script deploys.
func TestPlanFormat3NeedsVersion4(t *testing.T) {
	l := newLogFSMAt(t, 2, 3)
	if err := l.deploy("streams", nexmark.SQLStreamsText("1 second")); err != nil {
		t.Fatal(err)
	}
	before, hashes := len(l.f.SQLModules()), l.f.StateHashes()
	err := l.deploy("q5", nexmarkViews("q5"))
	if !errors.Is(err, replica.ErrNeedsVersion) || !strings.Contains(err.Error(), "format 3") {
		t.Fatalf("q5 at cluster version 3: got %v, want ErrNeedsVersion naming format 3", err)
	}
	if got := len(l.f.SQLModules()); got != before || !slices.Equal(hashes.Hashes, l.f.StateHashes().Hashes) {
		t.Fatalf("%d sql modules after the refusal (want %d), or the state changed", got, before)
	}
	if err := l.deploy("q1", "CREATE MATERIALIZED VIEW q1 AS SELECT auction, price FROM bid;"); err != nil {
		t.Fatalf("a format-1 script at version 3: %v", err)
	}
	l4 := newLogFSMAt(t, 2, 4)
	if err := l4.deploy("streams", nexmark.SQLStreamsText("1 second")); err != nil {
		t.Fatal(err)
	}
	if err := l4.deploy("q5", nexmarkViews("q5")); err != nil {
		t.Fatalf("q5 at cluster version 4: %v", err)
	}
}

// TestPlanFormat5NeedsVersion6: a HOP view (Nexmark q5) compiled with panes (plan
// format 5) is refused at cluster version 5 with ErrNeedsVersion, nothing deployed; the
// same text compiled for the cluster (format 3, no panes) deploys there, and with panes
// at version 6.
func TestPlanFormat5NeedsVersion6(t *testing.T) {
	l := newLogFSMAt(t, 2, 5)
	if err := l.deploy("streams", nexmark.SQLStreamsText("1 second")); err != nil {
		t.Fatal(err)
	}
	before, hashes := len(l.f.SQLModules()), l.f.StateHashes()
	err := l.deployFor("q5", nexmarkViews("q5"), 5)
	if !errors.Is(err, replica.ErrNeedsVersion) || !strings.Contains(err.Error(), "format 5") {
		t.Fatalf("q5 with panes at cluster version 5: got %v, want ErrNeedsVersion naming format 5", err)
	}
	if got := len(l.f.SQLModules()); got != before || !slices.Equal(hashes.Hashes, l.f.StateHashes().Hashes) {
		t.Fatalf("%d sql modules after the refusal (want %d), or the state changed", got, before)
	}
	if err := l.deploy("q5", nexmarkViews("q5")); err != nil {
		t.Fatalf("q5 compiled for cluster version 5: %v", err)
	}
	for _, m := range l.f.SQLModules() {
		for _, v := range m.Plan.Views {
			if v.Window != nil && v.Window.Panes {
				t.Fatalf("view %s compiled for cluster version 5 has panes", v.Name)
			}
		}
	}
	l6 := newLogFSMAt(t, 2, 6)
	if err := l6.deploy("streams", nexmark.SQLStreamsText("1 second")); err != nil {
		t.Fatal(err)
	}
	if err := l6.deploy("q5", nexmarkViews("q5")); err != nil {
		t.Fatalf("q5 at cluster version 6: %v", err)
	}
	panes := 0
	for _, m := range l6.f.SQLModules() {
		for _, v := range m.Plan.Views {
			if v.Window != nil && v.Window.Panes {
				panes++
			}
		}
	}
	if panes != 1 {
		t.Fatalf("q5 at cluster version 6: %d views with panes, want 1 (q5_bids)", panes)
	}
}

// TestPlanFormat6NeedsVersion7: a stream–stream join (Nexmark q7) compiled with its
// sides in tables of their own (plan format 6) is refused at cluster version 6 with
// ErrNeedsVersion, nothing deployed; compiled for the cluster it deploys there without
// them, and with them at version 7.
func TestPlanFormat6NeedsVersion7(t *testing.T) {
	sideTables := func(l *logFSM) (n int) {
		for _, m := range l.f.SQLModules() {
			for _, v := range m.Plan.Views {
				if v.Pair != nil && v.Pair.SideTables {
					n++
				}
			}
		}
		return n
	}
	l := newLogFSMAt(t, 2, 6)
	if err := l.deploy("streams", nexmark.SQLStreamsText("1 second")); err != nil {
		t.Fatal(err)
	}
	before, hashes := len(l.f.SQLModules()), l.f.StateHashes()
	err := l.deployFor("q7", nexmarkViews("q7"), 6)
	if !errors.Is(err, replica.ErrNeedsVersion) || !strings.Contains(err.Error(), "format 6") || !strings.Contains(err.Error(), "cluster version 7") {
		t.Fatalf("q7 with side tables at cluster version 6: got %v, want ErrNeedsVersion naming format 6 and version 7", err)
	}
	if got := len(l.f.SQLModules()); got != before || !slices.Equal(hashes.Hashes, l.f.StateHashes().Hashes) {
		t.Fatalf("%d sql modules after the refusal (want %d), or the state changed", got, before)
	}
	if err := l.deploy("q7", nexmarkViews("q7")); err != nil {
		t.Fatalf("q7 compiled for cluster version 6: %v", err)
	}
	if n := sideTables(l); n != 0 {
		t.Fatalf("q7 compiled for cluster version 6: %d joins with side tables", n)
	}
	l7 := newLogFSMAt(t, 2, 7)
	if err := l7.deploy("streams", nexmark.SQLStreamsText("1 second")); err != nil {
		t.Fatal(err)
	}
	if err := l7.deploy("q7", nexmarkViews("q7")); err != nil {
		t.Fatalf("q7 at cluster version 7: %v", err)
	}
	if n := sideTables(l7); n != 1 {
		t.Fatalf("q7 at cluster version 7: %d joins with side tables, want 1", n)
	}
}

// TestRemoveModulesAllOrNone: "remove-modules" removes its modules in one entry, all or
// none: a set one of whose modules a view outside it reads is refused naming the view,
// and nothing is removed (state and deployment unchanged); the set with that view too is
// removed whatever the order named; below cluster version 5 the command is refused.
func TestRemoveModulesAllOrNone(t *testing.T) {
	script := [][2]string{{"clicks", `CREATE STREAM clicks (usr text, page text, ts timestamp, n bigint) WITH (key = 'usr');`},
		{"a", `CREATE MATERIALIZED VIEW a AS SELECT usr, n FROM clicks;`},
		{"b", `CREATE MATERIALIZED VIEW b AS SELECT page, count(*) AS c FROM clicks GROUP BY page;`}}
	old := newLogFSMAt(t, 2, 4)
	for _, d := range script {
		if err := old.deploy(d[0], d[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := old.config(batch.ConfigChange{Cmd: "remove-modules", Modules: []string{"a", "b"}}); !errors.Is(err, replica.ErrNeedsVersion) {
		t.Fatalf("remove-modules at version 4: got %v", err)
	}

	l := newLogFSM(t, 4)
	for _, d := range script {
		if err := l.deploy(d[0], d[1]); err != nil {
			t.Fatal(err)
		}
	}
	l.insert(clicksRows)
	l.apply(batch.Item{Kind: batch.KindTick})
	before, dep := l.f.StateHashes(), l.f.Deployment()
	for _, bad := range []struct {
		mods []string
		want string
	}{
		{[]string{"a", "clicks"}, "view b"},
		{[]string{"clicks", "a"}, "view b"},
		{[]string{"a", "nosuch"}, "no such module"},
		{[]string{"a", "a"}, "twice"},
		{nil, "no module"},
	} {
		err := l.config(batch.ConfigChange{Cmd: "remove-modules", Modules: bad.mods})
		if !errors.Is(err, replica.ErrBadClusterConfig) || !strings.Contains(err.Error(), bad.want) {
			t.Fatalf("remove-modules %q: got %v, want %q", bad.mods, err, bad.want)
		}
		if after := l.f.StateHashes(); !slices.Equal(after.Hashes, before.Hashes) || !reflect.DeepEqual(l.f.Deployment(), dep) {
			t.Fatalf("refused remove-modules %q changed the state or deployment", bad.mods)
		}
	}
	if err := l.config(batch.ConfigChange{Cmd: "remove-modules", Modules: []string{"clicks", "b", "a"}}); err != nil {
		t.Fatal(err)
	}
	if len(l.f.SQLModules()) != 0 {
		t.Fatalf("modules left: %+v", l.f.SQLModules())
	}
	for _, s := range []string{"clicks", "a", "b", "b.by_key"} {
		if _, ok := l.f.Engine().Partitions()[0].StreamInfo(s); ok {
			t.Fatalf("stream %s left", s)
		}
	}
}

// TestPlanFormat4NeedsVersion5: an outer join of two streams needs plan format 4, which
// cluster version 4 refuses (ErrNeedsVersion, nothing deployed: its binaries decode
// formats up to 3) and version 5 deploys; an inner join's plan stays format 2; outer
// joins the executor cannot finish are refused at their place.
func TestPlanFormat4NeedsVersion5(t *testing.T) {
	const streams = `CREATE STREAM l (id text, g bigint, ts timestamp) WITH (key = 'id', event_time = 'ts');
CREATE STREAM r (id text, g bigint, ts timestamp) WITH (key = 'id', event_time = 'ts');`
	const outer = `CREATE MATERIALIZED VIEW o AS SELECT l.id AS lid, r.id AS rid FROM l LEFT JOIN r
  ON l.g = r.g AND r.ts BETWEEN l.ts AND l.ts + INTERVAL '1 second';`
	if v := mustCompileFor(t, streams+outer, 5).Plan.MinVersion(); v != 4 {
		t.Fatalf("outer join plan: format %d, want 4", v)
	}
	if e := mustCompile(t, streams+outer).Plan.Explain(); !strings.Contains(e, "o.join: LEFT OUTER JOIN r") || !strings.Contains(e, "o.unmatched") {
		t.Errorf("EXPLAIN of an outer join:\n%s", e)
	}
	if v := mustCompileFor(t, streams+strings.Replace(outer, "LEFT JOIN", "JOIN", 1), 5).Plan.MinVersion(); v != 2 {
		t.Fatalf("inner join plan: format %d, want 2", v)
	}
	old := newLogFSMAt(t, 2, 4)
	if err := old.deploy("l", streams); err != nil {
		t.Fatal(err)
	}
	if err := old.deploy("o", outer); !errors.Is(err, replica.ErrNeedsVersion) || !strings.Contains(err.Error(), "cluster version 5") {
		t.Fatalf("outer join at cluster version 4: got %v", err)
	}
	if len(old.f.SQLModules()) != 1 {
		t.Fatalf("the refused deploy left modules: %d", len(old.f.SQLModules()))
	}
	l := newLogFSMAt(t, 2, 5)
	if err := l.deploy("l", streams); err != nil {
		t.Fatal(err)
	}
	if err := l.deploy("o", outer); err != nil {
		t.Fatalf("outer join at cluster version 5: %v", err)
	}
	for _, bad := range []struct{ view, want string }{
		{`CREATE MATERIALIZED VIEW b AS SELECT l.id FROM l LEFT JOIN r ON l.g = r.g AND r.ts >= l.ts;`, "upper bound"},
		{`CREATE MATERIALIZED VIEW b AS SELECT r.id FROM l RIGHT JOIN r ON l.g = r.g AND r.ts <= l.ts;`, "lower bound"},
		{`CREATE MATERIALIZED VIEW b AS SELECT l.g, count(*) AS c FROM l FULL JOIN r ON l.g = r.g AND r.ts BETWEEN l.ts AND l.ts + INTERVAL '1 second' GROUP BY l.g;`, "aggregate"},
	} {
		_, err := sql.Compile(bad.view, sql.Options{Catalog: l.catalog()})
		var se *sql.Error
		if !errors.As(err, &se) || se.Kind != sql.ErrUnsupported || se.Line != 1 || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: got %v, want unsupported at line 1 saying %q", bad.view, err, bad.want)
		}
	}
}
