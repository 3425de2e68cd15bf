package pgsink_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/client/pgsink"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/pgtest"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// cluster starts a one-node in-process cluster with stream "s" and returns a client.
func cluster(t *testing.T) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	lc, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: 1, Node: node.Config{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Close() })
	cfg := client.DefaultConfig()
	cfg.Addrs, cfg.TLS = lc.ClientAddrs(), lc.ClientConfig().TLS
	cfg.MaxRetries = -1
	cl, err := client.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: "s"}); err != nil {
		t.Fatal(err)
	}
	return cl
}

// appendN appends records k<from>..k<from+n-1> to stream s.
func appendN(t *testing.T, cl *client.Client, from, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := from; i < from+n; i += 500 {
		var batch []client.StreamRecord
		for j := i; j < min(i+500, from+n); j++ {
			batch = append(batch, client.StreamRecord{Key: []byte(fmt.Sprintf("k%d", j)), Value: []byte(fmt.Sprintf("v%d", j))})
		}
		if _, err := cl.AppendBatch(ctx, "s", batch); err != nil {
			t.Fatal(err)
		}
	}
}

func createTarget(t *testing.T, db *pgtest.DB, name string) {
	t.Helper()
	db.Exec(t, fmt.Sprintf(pgsink.TableSchema, name))
}

// counts returns the rows of table and the distinct (partition, offset) among them.
func counts(t *testing.T, db *pgtest.DB, table string) (rows, distinct int) {
	t.Helper()
	conn := db.Connect(t)
	defer conn.Close(context.Background()) // polled: do not hold a connection per call until the test ends
	err := conn.QueryRow(context.Background(), fmt.Sprintf(`SELECT count(*), count(DISTINCT (partition, "offset")) FROM %s`, table)).Scan(&rows, &distinct)
	if err != nil {
		t.Fatal(err)
	}
	return rows, distinct
}

// checkNextEpochs checks that newer took, of every partition, the epoch after older's.
func checkNextEpochs(t *testing.T, older, newer *pgsink.Sink) {
	t.Helper()
	o, n := older.Epochs(), newer.Epochs()
	if len(o) != 4 || len(n) != 4 {
		t.Fatalf("epochs %v then %v, want all 4 partitions", o, n)
	}
	for p, e := range o {
		if n[p] != e+1 {
			t.Errorf("partition %d: epoch %d after %d, want one more", p, n[p], e)
		}
	}
}

func config(db *pgtest.DB, t *testing.T) pgsink.Config {
	return pgsink.Config{DSN: db.DSN, Table: "events", Stream: "s", Logger: testutil.Logger(t, slog.LevelInfo)}
}

// run runs s until the table holds want rows, then stops it.
func run(t *testing.T, s *pgsink.Sink, db *pgtest.DB, want int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	testutil.WaitFor(t, time.Minute, func() error {
		select {
		case err := <-done:
			t.Fatalf("Run ended early: %v", err)
		default:
		}
		if n, _ := counts(t, db, "events"); n < want {
			return fmt.Errorf("%d rows, want %d", n, want)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
}

// TestSinkResumesExactlyOnce: a second instance resumes from the offsets the first
// stored with its rows (DESIGN.md section 5, "Out"): every record once.
func TestSinkResumesExactlyOnce(t *testing.T) {
	testResumesExactlyOnce(t, func(cl *client.Client) pgsink.Origin {
		return &pgsink.SubscribeOrigin{Client: cl, Options: []client.SubscribeOption{client.WithCredit(700, 1<<20)}}
	})
}

func testResumesExactlyOnce(t *testing.T, origin func(*client.Client) pgsink.Origin) {
	cl := cluster(t)
	db := pgtest.New(t)
	createTarget(t, db, "events")
	appendN(t, cl, 0, 3000)
	ctx := context.Background()
	s1, err := pgsink.Open(ctx, config(db, t), origin(cl))
	if err != nil {
		t.Fatal(err)
	}
	run(t, s1, db, 3000)
	s1.Close()

	appendN(t, cl, 3000, 2000)
	s2, err := pgsink.Open(ctx, config(db, t), origin(cl))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	checkNextEpochs(t, s1, s2)
	resumed := 0
	for _, next := range s2.Resume() {
		resumed += int(next)
	}
	if resumed != 3000 {
		t.Errorf("stored offsets add up to %d, want 3000 (%v)", resumed, s2.Resume())
	}
	run(t, s2, db, 5000)
	if rows, distinct := counts(t, db, "events"); rows != 5000 || distinct != 5000 {
		t.Fatalf("%d rows, %d distinct; want 5000 of each", rows, distinct)
	}
}

// TestSinkFencedByNewerInstance: once a newer instance took the next epoch, an older
// one's transaction is rolled back with ErrFenced and writes nothing.
func TestSinkFencedByNewerInstance(t *testing.T) {
	cl := cluster(t)
	db := pgtest.New(t)
	createTarget(t, db, "events")
	appendN(t, cl, 0, 1000)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old, err := pgsink.Open(ctx, config(db, t), &pgsink.SubscribeOrigin{Client: cl})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	newer, err := pgsink.Open(ctx, config(db, t), &pgsink.SubscribeOrigin{Client: cl})
	if err != nil {
		t.Fatal(err)
	}
	defer newer.Close()
	err = old.Run(ctx)
	var fe *pgsink.FencedError
	if !errors.As(err, &fe) || !errors.Is(err, pgsink.ErrFenced) || fe.Epoch != old.Epochs()[fe.Partition] || fe.Group != "" {
		t.Fatalf("old instance's Run: %v, want a FencedError for one of its epochs %v", err, old.Epochs())
	}
	if rows, _ := counts(t, db, "events"); rows != 0 {
		t.Fatalf("the fenced instance wrote %d rows", rows)
	}
	run(t, newer, db, 1000)
	if rows, distinct := counts(t, db, "events"); rows != 1000 || distinct != 1000 {
		t.Fatalf("%d rows, %d distinct; want 1000 of each", rows, distinct)
	}
}

// TestOpenBadInput: a bad DSN, an unreachable server, a missing or misshapen table and an
// unknown stream are typed errors before anything is written: not even the sink's own
// tables are created.
func TestOpenBadInput(t *testing.T) {
	cl := cluster(t)
	appendN(t, cl, 0, 10)
	db := pgtest.New(t)
	createTarget(t, db, "events")
	db.Exec(t, `CREATE TABLE narrow (stream text, partition integer, "offset" integer, key bytea)`)
	closed := testutil.FreeAddrs(t, 1)[0]
	// Group g consumes stream s: a sink of another stream cannot join it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: "other"}); err != nil {
		t.Fatal(err)
	}
	gm, err := cl.JoinGroup(ctx, "g", "s", "first")
	if err != nil {
		t.Fatal(err)
	}
	defer gm.Close()
	cases := []struct {
		name string
		edit func(*pgsink.Config)
		want error
	}{
		{"unparseable DSN", func(c *pgsink.Config) { c.DSN = "postgres://%zz" }, pgsink.ErrBadDSN},
		{"nothing listening", func(c *pgsink.Config) { c.DSN = "postgres://u@" + closed + "/db?connect_timeout=5" }, pgsink.ErrConnect},
		{"missing table", func(c *pgsink.Config) { c.Table = "nope" }, pgsink.ErrMissingTable},
		{"missing schema", func(c *pgsink.Config) { c.Table = "nope.events" }, pgsink.ErrMissingTable},
		{"wrong columns", func(c *pgsink.Config) { c.Table = "narrow" }, pgsink.ErrTableSchema},
		{"unknown stream", func(c *pgsink.Config) { c.Stream = "nope" }, pgsink.ErrUnknownStream},
		{"bad table name", func(c *pgsink.Config) { c.Table = "a.b.c" }, pgsink.ErrBadConfig},
		{"no stream", func(c *pgsink.Config) { c.Stream = "" }, pgsink.ErrBadConfig},
		{"bad on-trimmed", func(c *pgsink.Config) { c.OnTrimmed = "ignore" }, pgsink.ErrBadConfig},
		{"member without group", func(c *pgsink.Config) { c.Member = "m" }, pgsink.ErrBadConfig},
		{"group of another stream", func(c *pgsink.Config) { c.Stream, c.Group = "other", "g" }, client.ErrBadArguments},
	}
	conn := db.Connect(t)
	for i, tc := range cases {
		cfg := config(db, t)
		tc.edit(&cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := pgsink.Open(ctx, cfg, &pgsink.SubscribeOrigin{Client: cl})
		cancel()
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("#%d %s: got %v, want %v", i, tc.name, err, tc.want)
			continue
		}
		t.Logf("#%d %s: %v", i, tc.name, err)
		var meta int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'lockstep_sink_%'`, db.Schema).Scan(&meta); err != nil {
			t.Fatal(err)
		}
		if meta != 0 {
			t.Fatalf("#%d %s: the sink's tables were created", i, tc.name)
		}
	}
	if rows, _ := counts(t, db, "events"); rows != 0 {
		t.Fatalf("%d rows written", rows)
	}
	if d, err := cl.Groups().Describe(ctx, "g"); err != nil || len(d.Members) != 1 || d.Generation != 1 {
		t.Fatalf("group g after the refused join: %+v, %v; want generation 1 with its one member", d, err)
	}
}

// TestPausedInstanceCutOff: an instance paused inside a transaction that holds the epoch
// row (between its epoch check and its commit) blocks a newer instance's start only until
// the server ends the idle transaction (Config.IdleInTransactionTimeout); the paused
// instance's transaction is then gone and writes nothing.
func TestPausedInstanceCutOff(t *testing.T) {
	cl := cluster(t)
	db := pgtest.New(t)
	createTarget(t, db, "events")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := config(db, t)
	cfg.IdleInTransactionTimeout = 500 * time.Millisecond
	old, err := pgsink.Open(ctx, cfg, &pgsink.SubscribeOrigin{Client: cl})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	tx, err := old.HoldEpoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	octx, ocancel := context.WithTimeout(ctx, 20*time.Second)
	defer ocancel()
	newer, err := pgsink.Open(octx, config(db, t), &pgsink.SubscribeOrigin{Client: cl})
	if err != nil {
		t.Fatalf("the newer instance did not start while the paused one held the epoch row: %v", err)
	}
	defer newer.Close()
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the newer instance waited %v", took)
	}
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("the paused instance's transaction committed after a newer instance started")
	}
	checkNextEpochs(t, old, newer)
}

// TestSinkGroupShareTable: two sinks in one consumer group write the same table, each
// its assigned partitions, without fencing each other (the epochs are per partition). A
// member that has not yet learned that a partition went to a newer generation's member
// is fenced on it (its transaction rolled back), learns its new assignment and goes on:
// every record lands exactly once.
func TestSinkGroupShareTable(t *testing.T) {
	cl := cluster(t)
	db := pgtest.New(t)
	createTarget(t, db, "events")
	appendN(t, cl, 0, 1000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	groupConfig := func(member string, log *testutil.SyncBuffer) pgsink.Config {
		cfg := config(db, t)
		cfg.Group, cfg.Member = "sinks", member
		// A heartbeat every 20 s: a learns of b's join only when fenced.
		cfg.GroupSessionTimeout = time.Minute
		cfg.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(log, testWriter{t}), nil))
		return cfg
	}
	var logA, logB testutil.SyncBuffer
	a, err := pgsink.Open(ctx, groupConfig("a", &logA), &pgsink.SubscribeOrigin{Client: cl})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	doneA := make(chan error, 1)
	go func() { doneA <- a.Run(ctx) }()
	waitRows := func(want int) {
		t.Helper()
		testutil.WaitFor(t, time.Minute, func() error {
			if n, _ := counts(t, db, "events"); n < want {
				return fmt.Errorf("%d rows, want %d", n, want)
			}
			return nil
		})
	}
	waitRows(1000)

	b, err := pgsink.Open(ctx, groupConfig("b", &logB), &pgsink.SubscribeOrigin{Client: cl})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	doneB := make(chan error, 1)
	go func() { doneB <- b.Run(ctx) }()
	testutil.WaitFor(t, 20*time.Second, func() error {
		if !strings.Contains(logB.String(), "partitions taken") {
			return errors.New("b has taken no partitions yet")
		}
		return nil
	})
	appendN(t, cl, 1000, 2000)
	waitRows(3000)
	if !strings.Contains(logA.String(), "fenced by a later generation") {
		t.Errorf("a was never fenced on a partition b took; its log:\n%s", logA.String())
	}
	for _, d := range []chan error{doneA, doneB} {
		select {
		case err := <-d:
			t.Fatalf("a sink's Run ended: %v", err)
		default:
		}
	}
	cancel()
	for _, d := range []chan error{doneA, doneB} {
		if err := <-d; err != nil {
			t.Errorf("Run after cancel: %v", err)
		}
	}
	ra, _, _ := a.Stats()
	rb, _, _ := b.Stats()
	if ra == 0 || rb == 0 {
		t.Errorf("a wrote %d records, b %d: want both to write", ra, rb)
	}
	if rows, distinct := counts(t, db, "events"); rows != 3000 || distinct != 3000 {
		t.Fatalf("%d rows, %d distinct; want 3000 of each", rows, distinct)
	}
}

// testWriter writes a sink's log lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestSinkOnTrimmed: records trimmed by retention before the sink wrote them stop a sink
// with OnTrimmed fail (ErrTrimmed, also client.ErrOffsetTrimmed), writing nothing more;
// with skip it goes on from the first record kept and counts those it skipped.
func TestSinkOnTrimmed(t *testing.T) {
	cl := cluster(t)
	db := pgtest.New(t)
	createTarget(t, db, "events")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: "r", Retention: builtin.StreamRetention{MaxRecords: 10}}); err != nil {
		t.Fatal(err)
	}
	add := func(from, n int) {
		for i := from; i < from+n; i++ {
			if _, err := cl.Append(ctx, "r", []byte("same-key"), []byte(fmt.Sprintf("v%d", i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := config(db, t)
	cfg.Stream = "r"
	add(0, 5)
	s, err := pgsink.Open(ctx, cfg, &pgsink.SubscribeOrigin{Client: cl})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, db, 5)
	s.Close()
	add(5, 30) // the partition keeps offsets 25 to 34

	s, err = pgsink.Open(ctx, cfg, &pgsink.SubscribeOrigin{Client: cl})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Run(ctx)
	s.Close()
	var te *client.OffsetTrimmedError
	if !errors.Is(err, pgsink.ErrTrimmed) || !errors.As(err, &te) || te.First != 25 {
		t.Fatalf("fail: Run returned %v, want ErrTrimmed naming first offset 25", err)
	}
	t.Logf("fail: %v", err)
	if rows, _ := counts(t, db, "events"); rows != 5 {
		t.Fatalf("fail: %d rows after, want the 5 written before", rows)
	}

	cfg.OnTrimmed = pgsink.TrimmedSkip
	s, err = pgsink.Open(ctx, cfg, &pgsink.SubscribeOrigin{Client: cl})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run(t, s, db, 15)
	if _, _, skipped := s.Stats(); skipped != 20 {
		t.Errorf("skip: %d records counted as skipped, want 20", skipped)
	}
	var low, high int64
	conn := db.Connect(t)
	if err := conn.QueryRow(ctx, `SELECT min("offset") FILTER (WHERE "offset" >= 5), max("offset") FROM events`).Scan(&low, &high); err != nil {
		t.Fatal(err)
	}
	if rows, distinct := counts(t, db, "events"); rows != 15 || distinct != 15 || low != 25 || high != 34 {
		t.Fatalf("skip: %d rows, %d distinct, offsets after the gap %d to %d; want 15 rows: 0-4 and 25-34", rows, distinct, low, high)
	}
}

// TestSinkStoredOffsetPastEnd: an offset stored in PostgreSQL beyond the partition's end
// (the table was filled from another cluster, say) ends Run with client.ErrOffsetPastEnd
// and writes nothing: neither rows nor offsets change.
func TestSinkStoredOffsetPastEnd(t *testing.T) {
	cl := cluster(t)
	db := pgtest.New(t)
	createTarget(t, db, "events")
	appendN(t, cl, 0, 100)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := pgsink.Open(ctx, config(db, t), &pgsink.SubscribeOrigin{Client: cl})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, db, 100)
	s.Close()
	db.Exec(t, `UPDATE lockstep_sink_offsets SET next_offset = next_offset + 1000 WHERE partition = 1`)
	appendN(t, cl, 100, 100)
	s, err = pgsink.Open(ctx, config(db, t), &pgsink.SubscribeOrigin{Client: cl})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := s.Resume()
	err = s.Run(ctx)
	if !errors.Is(err, client.ErrOffsetPastEnd) {
		t.Fatalf("Run: %v, want ErrOffsetPastEnd", err)
	}
	t.Logf("Run: %v", err)
	if rows, _ := counts(t, db, "events"); rows != 100 {
		t.Errorf("%d rows, want the 100 of the first run", rows)
	}
	again, err := pgsink.Open(ctx, config(db, t), &pgsink.SubscribeOrigin{Client: cl})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if after := again.Resume(); !maps.Equal(after, before) {
		t.Errorf("stored offsets %v after the failed run, %v before", after, before)
	}
}

// TestOpenOldEpochsLayout: a lockstep_sink_epochs of the earlier layout (one epoch per
// sink) is refused with ErrTableSchema, before any epoch is taken.
func TestOpenOldEpochsLayout(t *testing.T) {
	cl := cluster(t)
	db := pgtest.New(t)
	createTarget(t, db, "events")
	db.Exec(t, `CREATE TABLE lockstep_sink_epochs (sink_table text NOT NULL, stream text NOT NULL, epoch bigint NOT NULL, PRIMARY KEY (sink_table, stream))`)
	db.Exec(t, `INSERT INTO lockstep_sink_epochs VALUES ('x.events', 's', 7)`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := pgsink.Open(ctx, config(db, t), &pgsink.SubscribeOrigin{Client: cl})
	if err == nil {
		s.Close()
	}
	if !errors.Is(err, pgsink.ErrTableSchema) || !strings.Contains(err.Error(), "earlier layout") {
		t.Fatalf("Open: %v, want ErrTableSchema naming the earlier layout", err)
	}
	conn := db.Connect(t)
	var epoch int64
	if err := conn.QueryRow(ctx, `SELECT epoch FROM lockstep_sink_epochs`).Scan(&epoch); err != nil || epoch != 7 {
		t.Fatalf("the old epochs table changed: epoch %d, %v", epoch, err)
	}
}
