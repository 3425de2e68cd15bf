package system

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/client/pgsink"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/pgtest"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/jepsen"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// The sink tests run the real `lockstep sink postgres` process against real node
// processes and a real PostgreSQL (internal/testutil/pgtest: CI's, or one started here).

// sinkRecords is how many records the kill tests append: 20,000, or
// $LOCKSTEP_SINK_RECORDS (the long run uses 100,000).
func sinkRecords(t *testing.T) int {
	if s := os.Getenv("LOCKSTEP_SINK_RECORDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("LOCKSTEP_SINK_RECORDS=%q: want a positive number", s)
		}
		return n
	}
	return 20000
}

// sinkFixture is a cluster of node processes with stream "s", a PostgreSQL schema with
// table "events", and the binary.
type sinkFixture struct {
	bin string
	c   *proctest.Cluster
	cl  *client.Client
	db  *pgtest.DB
	run int // sink processes started, to name their logs
}

func newSinkFixture(t *testing.T, nodes int) *sinkFixture {
	t.Helper()
	db := pgtest.New(t)
	db.Exec(t, fmt.Sprintf(pgsink.TableSchema, "events"))
	f := &sinkFixture{bin: proctest.BuildBinary(t), db: db}
	f.c = proctest.StartCluster(t, f.bin, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, client.Config{Addrs: strings.Split(f.c.AddrFlag(), ","), MaxRetries: -1, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	f.cl = cl
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: "s"}); err != nil {
		t.Fatal(err)
	}
	return f
}

// startSink starts a `lockstep sink postgres` process, killed when the test ends.
func (f *sinkFixture) startSink(t *testing.T, extra ...string) *jepsen.Process {
	t.Helper()
	f.run++
	args := append([]string{"sink", "postgres", "--stream", "s", "--table", "events", "--dsn", f.db.DSN,
		"--addr", f.c.AddrFlag(), "--timeout", "20s"}, extra...)
	p, err := jepsen.StartProcess(filepath.Join(t.TempDir(), fmt.Sprintf("sink%d.log", f.run)), proctest.Env(), nil, f.bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("sink %d", f.run)
	t.Cleanup(func() {
		p.Cmd.Process.Signal(syscall.SIGCONT)
		p.Kill()
		if bytes.Contains(p.Log(), []byte("DATA RACE")) {
			t.Errorf("%s found a data race", name)
		}
		if t.Failed() {
			t.Logf("log of %s:\n%s", name, p.Log())
		}
	})
	return p
}

// appendRange appends records r<from>..r<to-1> in batches of batch, a batch every pause,
// retrying a batch whose outcome is unknown (the stream may then hold it twice, which
// the reference read back from the stream includes).
func (f *sinkFixture) appendRange(ctx context.Context, from, to, batch int, pause time.Duration) error {
	for i := from; i < to; i += batch {
		var recs []client.StreamRecord
		for j := i; j < min(i+batch, to); j++ {
			recs = append(recs, client.StreamRecord{Key: []byte(fmt.Sprintf("k%d", j)), Value: []byte(fmt.Sprintf("v%d", j))})
		}
		for {
			actx, cancel := context.WithTimeout(ctx, 20*time.Second)
			_, err := f.cl.AppendBatch(actx, "s", recs)
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return err
			}
		}
		time.Sleep(pause)
	}
	return nil
}

// rowID places a record.
type rowID struct {
	part   int
	offset uint64
}

// rowData is what a record holds.
type rowData struct {
	key, value string
	eventMs    int64
}

// streamContents reads every record of stream s from every partition.
func (f *sinkFixture) streamContents(t *testing.T) map[rowID]rowData {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	desc, err := f.cl.Streams().Describe(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	out := map[rowID]rowData{}
	for _, p := range desc.Partitions {
		for next := p.FirstOffset; next < p.NextOffset; {
			recs, nx, err := f.cl.ReadStream(ctx, "s", int(p.Partition), next, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				out[rowID{int(p.Partition), r.Offset}] = rowData{string(r.Key), string(r.Data), r.EventTime.UnixMilli()}
			}
			next = nx
		}
	}
	return out
}

// tableContents reads table events: each record's data, and how many rows hold it.
func (f *sinkFixture) tableContents(t *testing.T) (map[rowID]rowData, map[rowID]int) {
	t.Helper()
	conn := f.db.Connect(t)
	rows, err := conn.Query(context.Background(), `SELECT stream, partition, "offset", key, value, event_time FROM events`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	data, n := map[rowID]rowData{}, map[rowID]int{}
	for rows.Next() {
		var stream string
		var part int32
		var off int64
		var key, value []byte
		var et time.Time
		if err := rows.Scan(&stream, &part, &off, &key, &value, &et); err != nil {
			t.Fatal(err)
		}
		if stream != "s" {
			t.Fatalf("row of stream %q", stream)
		}
		id := rowID{int(part), uint64(off)}
		data[id] = rowData{string(key), string(value), et.UnixMilli()}
		n[id]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return data, n
}

// tableRows counts the rows of events and the distinct records among them.
func (f *sinkFixture) tableRows(t *testing.T) (rows, distinct int) {
	t.Helper()
	conn := f.db.Connect(t)
	defer conn.Close(context.Background()) // polled: do not hold a connection per call until the test ends
	if err := conn.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT (partition, "offset")) FROM events`).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	return rows, distinct
}

// compare checks the table against the stream: every record present with its data, and
// returns how many records have more than one row.
func compare(t *testing.T, stream, table map[rowID]rowData, n map[rowID]int) (duplicated int) {
	t.Helper()
	for id, want := range stream {
		got, ok := table[id]
		if !ok {
			t.Errorf("record %v (%q) missing from the table", id, want.key)
			continue
		}
		if got != want {
			t.Errorf("record %v: table holds %+v, want %+v", id, got, want)
		}
		if n[id] > 1 {
			duplicated++
		}
	}
	for id := range table {
		if _, ok := stream[id]; !ok {
			t.Errorf("table row %v is no record of the stream", id)
		}
	}
	return duplicated
}

// leader returns the index in f.c.Procs of the current leader, waiting for one.
func (f *sinkFixture) leader(t *testing.T) int {
	t.Helper()
	idx := -1
	testutil.WaitFor(t, 30*time.Second, func() error {
		r := proctest.Run(t, f.bin, "cluster", "status", "--output", "json", "--addr", f.c.AddrFlag())
		var cs clusterStatusJSON
		if err := json.Unmarshal([]byte(r.Stdout), &cs); err != nil {
			return fmt.Errorf("cluster status: %v: %v", err, r)
		}
		for i, n := range f.c.Procs {
			if n.ID == cs.Leader {
				idx = i
				return nil
			}
		}
		return fmt.Errorf("no leader yet (%q)", cs.Leader)
	})
	return idx
}

// killAndRestartNode kills node i with SIGKILL and starts it again on its data directory.
func (f *sinkFixture) killAndRestartNode(t *testing.T, i int) {
	t.Helper()
	v := f.c.Procs[i]
	v.Kill()
	n := proctest.SpawnNode(t, f.bin, v.ID+"-again", "--id", v.ID, "--data", v.Data,
		"--raft", v.Raft, "--client", v.Client, "--admin", v.Admin, "--partitions", "4", "--log-level", "warn")
	n.ID, n.Raft, n.Client, n.Admin, n.Data = v.ID, v.Raft, v.Client, v.Admin, v.Data
	if err := n.WaitReady(n.Admin, proctest.ReadyTimeout); err != nil {
		t.Fatal(err)
	}
	f.c.Procs[i] = n
}

// sinkUnderKills appends records while the sink process is killed with SIGKILL every
// 1.5 to 3 s and restarted, and the leader node is killed twice (and restarted), then lets
// the last sink catch up and returns how many records the table holds more than once.
func sinkUnderKills(t *testing.T, extra ...string) (duplicated int) {
	f := newSinkFixture(t, 3)
	total := sinkRecords(t)
	const producing = 20 * time.Second
	batch := 100
	pause := producing / time.Duration(total/batch)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var appended atomic.Bool
	appendErr := make(chan error, 1)
	go func() {
		err := f.appendRange(ctx, 0, total, batch, pause)
		appended.Store(true)
		appendErr <- err
	}()

	sink := f.startSink(t, extra...)
	kills, nodeKills := 0, 0
	start := time.Now()
	for !appended.Load() {
		time.Sleep(time.Duration(1500+rand.IntN(1500)) * time.Millisecond)
		sink.Kill() // SIGKILL: no shutdown code runs
		kills++
		if el := time.Since(start); nodeKills == 0 && el > producing/3 || nodeKills == 1 && el > 2*producing/3 {
			i := f.leader(t)
			t.Logf("killing the leader, node %s", f.c.Procs[i].ID)
			f.killAndRestartNode(t, i)
			nodeKills++
		}
		sink = f.startSink(t, extra...)
	}
	if err := <-appendErr; err != nil {
		t.Fatal(err)
	}
	if nodeKills < 2 {
		t.Fatalf("only %d node kills during the appends", nodeKills)
	}
	// The reference is the stream as the cluster holds it; it must hold every record
	// appended (acknowledged, after retries of unknown outcomes).
	want := f.streamContents(t)
	keys := map[string]bool{}
	for _, r := range want {
		keys[r.key] = true
	}
	for i := range total {
		if !keys[fmt.Sprintf("k%d", i)] {
			t.Fatalf("record k%d is not in the stream (%d records)", i, len(want))
		}
	}
	testutil.WaitFor(t, 2*time.Minute, func() error {
		if !sink.Running() {
			t.Fatalf("the last sink exited: %s", sink.Log())
		}
		if _, distinct := f.tableRows(t); distinct < len(want) {
			return fmt.Errorf("%d of %d records in the table", distinct, len(want))
		}
		return nil
	})
	sink.Stop(10 * time.Second)
	if code := sink.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("sink exit code %d after SIGTERM, want 0: %s", code, sink.Log())
	}
	table, n := f.tableContents(t)
	duplicated = compare(t, want, table, n)
	rows, _ := f.tableRows(t)
	t.Logf("%d records, %d rows, %d records duplicated; %d sink kills, %d node kills", len(want), rows, duplicated, kills, nodeKills)
	return duplicated
}

// TestSinkExactlyOnceUnderKills: the first Show item (DESIGN.md section 5, "Out"):
// records flow while the sink process is killed with SIGKILL every few seconds and a
// node, the leader each time, is killed twice; the table then holds every record of the
// stream exactly once, with its data.
func TestSinkExactlyOnceUnderKills(t *testing.T) {
	if d := sinkUnderKills(t); d != 0 {
		t.Fatalf("%d records written more than once", d)
	}
}

// TestSinkAtLeastOnceShowsDuplicates is the same run with --at-least-once, which commits
// offsets apart from the rows: the check above must find duplicates, so it can fail.
func TestSinkAtLeastOnceShowsDuplicates(t *testing.T) {
	if d := sinkUnderKills(t, "--at-least-once"); d == 0 {
		t.Fatal("no duplicates with --at-least-once: the exactly-once check could not fail")
	}
}

// TestSinkZombieFenced: a sink paused with SIGSTOP, resumed after a new instance took
// over, writes nothing and exits with the fencing error.
func TestSinkZombieFenced(t *testing.T) {
	f := newSinkFixture(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := f.appendRange(ctx, 0, 2000, 500, 0); err != nil {
		t.Fatal(err)
	}
	zombie := f.startSink(t)
	f.waitRows(t, 2000)
	f.fenceZombie(t, ctx, zombie, func() *jepsen.Process { return f.startSink(t) }, exitFailure, "no longer current")
}

// TestSinkBadInput: a bad DSN, an unreachable server, a missing table, an unknown
// stream, bad flags and a group of another stream end the command with one clear line
// and exit 1, before anything is written.
func TestSinkBadInput(t *testing.T) {
	f := newSinkFixture(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.appendRange(ctx, 0, 100, 100, 0); err != nil {
		t.Fatal(err)
	}
	closed := testutil.FreeAddrs(t, 1)[0]
	// Group g consumes stream s: a sink of stream other cannot join it.
	if err := f.cl.Streams().Create(ctx, builtin.StreamDefinition{Name: "other"}); err != nil {
		t.Fatal(err)
	}
	gm, err := f.cl.JoinGroup(ctx, "g", "s", "first")
	if err != nil {
		t.Fatal(err)
	}
	defer gm.Close()
	base := []string{"sink", "postgres", "--addr", f.c.AddrFlag(), "--timeout", "10s"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--stream", "s", "--table", "events", "--dsn", "postgres://%zz"}, "bad DSN"},
		{[]string{"--stream", "s", "--table", "events", "--dsn", "postgres://u@" + closed + "/db"}, "cannot connect to PostgreSQL"},
		{[]string{"--stream", "s", "--table", "nope", "--dsn", f.db.DSN}, "target table does not exist"},
		{[]string{"--stream", "nope", "--table", "events", "--dsn", f.db.DSN}, `unknown stream "nope"`},
		{[]string{"--stream", "s", "--table", "events"}, `"dsn" not set`},
		{[]string{"--stream", "s", "--table", "events", "--dsn", f.db.DSN, "--on-trimmed", "ignore"}, `--on-trimmed "ignore": want fail or skip`},
		{[]string{"--stream", "s", "--table", "events", "--dsn", f.db.DSN, "--member", "m"}, "--member needs --group"},
		{[]string{"--stream", "other", "--table", "events", "--dsn", f.db.DSN, "--group", "g"}, `join group "g"`},
	}
	for _, tc := range cases {
		proctest.CheckFailure(t, proctest.Run(t, f.bin, append(base, tc.args...)...), tc.want)
	}
	if rows, _ := f.tableRows(t); rows != 0 {
		t.Fatalf("%d rows written", rows)
	}
	var meta int
	conn := f.db.Connect(t)
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'lockstep_sink_%'`, f.db.Schema).Scan(&meta); err != nil {
		t.Fatal(err)
	}
	if meta != 0 {
		t.Fatal("the sink's tables were created")
	}
}

// TestSinkGroupUnderKills: three `lockstep sink postgres --group` processes share the
// stream's partitions through a consumer group while records flow: two start, one of
// them is killed with SIGKILL mid-stream (its partitions go to the survivor once its
// session expires), a third joins later. Each member writes only the partitions the
// group assigned it (no partition taken by two members in one generation), and the
// table ends up holding every record exactly once.
func TestSinkGroupUnderKills(t *testing.T) {
	f := newSinkFixture(t, 1)
	const total, batch = 20000, 100
	const producing = 12 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	appendErr := make(chan error, 1)
	go func() { appendErr <- f.appendRange(ctx, 0, total, batch, producing/time.Duration(total/batch)) }()

	member := func(id string) *jepsen.Process {
		return f.startSink(t, "--group", "sinks", "--member", id, "--group-session-timeout", "2s", "--batch", "500", "--log-format", "json")
	}
	sinks := map[string]*jepsen.Process{"m1": member("m1"), "m2": member("m2")}
	f.waitRowsAtLeast(t, total/4)
	sinks["m1"].Kill() // SIGKILL mid-stream: no leave, no shutdown code
	t.Log("killed sink m1")
	f.waitRowsAtLeast(t, total/2)
	sinks["m3"] = member("m3")
	if err := <-appendErr; err != nil {
		t.Fatal(err)
	}
	want := f.streamContents(t)
	if len(want) < total {
		t.Fatalf("the stream holds %d records, %d appended", len(want), total)
	}
	testutil.WaitFor(t, 2*time.Minute, func() error {
		for _, id := range []string{"m2", "m3"} {
			if !sinks[id].Running() {
				t.Fatalf("sink %s exited: %s", id, sinks[id].Log())
			}
		}
		if _, distinct := f.tableRows(t); distinct < len(want) {
			return fmt.Errorf("%d of %d records in the table", distinct, len(want))
		}
		return nil
	})
	for _, id := range []string{"m2", "m3"} {
		sinks[id].Stop(10 * time.Second)
		if code := sinks[id].Cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("sink %s exit code %d after SIGTERM, want 0", id, code)
		}
	}
	table, n := f.tableContents(t)
	if d := compare(t, want, table, n); d != 0 {
		t.Fatalf("%d records written more than once", d)
	}

	// Who took which partitions in which generation, from the members' logs.
	type taken struct {
		Msg        string `json:"msg"`
		Generation uint64 `json:"generation"`
		Partitions []int  `json:"partitions"`
	}
	owners := map[uint64]map[int]string{}
	takes := map[string]int{}
	for id, p := range sinks {
		for _, line := range strings.Split(string(p.Log()), "\n") {
			var e taken
			if json.Unmarshal([]byte(line), &e) != nil || e.Msg != "partitions taken" {
				continue
			}
			takes[id]++
			if owners[e.Generation] == nil {
				owners[e.Generation] = map[int]string{}
			}
			for _, part := range e.Partitions {
				if o, ok := owners[e.Generation][part]; ok && o != id {
					t.Errorf("generation %d: partition %d taken by %s and %s", e.Generation, part, o, id)
				}
				owners[e.Generation][part] = id
			}
		}
	}
	for _, id := range []string{"m1", "m2", "m3"} {
		if takes[id] == 0 {
			t.Errorf("sink %s never took a partition", id)
		}
	}
	if len(owners) < 3 {
		t.Errorf("partitions taken in %d generations, want at least 3 (two joins, an expiry, a join)", len(owners))
	}
	rows, _ := f.tableRows(t)
	t.Logf("%d records, %d rows; partitions by generation: %v", len(want), rows, owners)
}

// TestSinkGroupZombieFenced: a group member paused with SIGSTOP past its session loses
// its partitions to the other member, which resumes them from PostgreSQL's offsets;
// resumed, the zombie writes nothing (its transactions fail on the epochs the new owner
// took), learns it is out of the group and exits 1. Every record is in the table once.
func TestSinkGroupZombieFenced(t *testing.T) {
	f := newSinkFixture(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	member := func(id string) *jepsen.Process {
		return f.startSink(t, "--group", "sinks", "--member", id, "--group-session-timeout", "2s")
	}
	zombie, other := member("z"), member("o")
	if err := f.appendRange(ctx, 0, 2000, 500, 0); err != nil {
		t.Fatal(err)
	}
	f.waitRows(t, 2000)
	// o takes z's partitions once z's session expires.
	f.fenceZombie(t, ctx, zombie, func() *jepsen.Process { return other }, exitRejected, "not a consumer group member")
}

// waitRows waits up to a minute for the table to hold want rows.
func (f *sinkFixture) waitRows(t *testing.T, want int) {
	t.Helper()
	testutil.WaitFor(t, time.Minute, func() error {
		if rows, _ := f.tableRows(t); rows != want {
			return fmt.Errorf("%d rows, want %d", rows, want)
		}
		return nil
	})
}

// waitRowsAtLeast waits up to two minutes for the table to hold at least n rows.
func (f *sinkFixture) waitRowsAtLeast(t *testing.T, n int) {
	t.Helper()
	testutil.WaitFor(t, 2*time.Minute, func() error {
		if rows, _ := f.tableRows(t); rows < n {
			return fmt.Errorf("%d rows, want at least %d", rows, n)
		}
		return nil
	})
}

// fenceZombie is the zombie scenario after the table holds records 0..1999: it pauses
// zombie with SIGSTOP, appends records 2000..3999, which takeOver's sink (started by it or
// already running) writes, resumes zombie, appends 4000..4999, and checks that zombie exits
// 1 with an error containing fenceErr, that the other sink runs on, and that the table
// holds every record of the stream once.
func (f *sinkFixture) fenceZombie(t *testing.T, ctx context.Context, zombie *jepsen.Process, takeOver func() *jepsen.Process, wantExit int, fenceErr string) {
	t.Helper()
	if err := zombie.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := f.appendRange(ctx, 2000, 4000, 500, 0); err != nil {
		t.Fatal(err)
	}
	other := takeOver()
	f.waitRows(t, 4000)
	if err := zombie.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := f.appendRange(ctx, 4000, 5000, 500, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-zombie.Exited:
	case <-time.After(time.Minute):
		t.Fatal("the resumed zombie sink is still running")
	}
	if code := zombie.Cmd.ProcessState.ExitCode(); code != wantExit || !bytes.Contains(zombie.Log(), []byte(fenceErr)) {
		t.Fatalf("zombie exit %d, want %d with an error containing %q: %s", code, wantExit, fenceErr, zombie.Log())
	}
	t.Logf("the zombie's log:\n%s", zombie.Log())
	f.waitRows(t, 5000)
	if !other.Running() {
		t.Fatalf("the other sink exited: %s", other.Log())
	}
	other.Stop(10 * time.Second)
	table, n := f.tableContents(t)
	if d := compare(t, f.streamContents(t), table, n); d != 0 {
		t.Fatalf("%d records written twice", d)
	}
}
