package pgsink_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	cfg.Addrs = lc.ClientAddrs()
	cfg.MaxRetries = -1
	cl, err := client.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	if err := cl.CreateStream(ctx, builtin.StreamDefinition{Name: "s"}); err != nil {
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
			batch = append(batch, client.StreamRecord{Key: fmt.Sprintf("k%d", j), Value: []byte(fmt.Sprintf("v%d", j))})
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
// stored with its rows (DESIGN.md section 5, "Out"): every record once, read by polling
// and by a push subscription.
func TestSinkResumesExactlyOnce(t *testing.T) {
	t.Run("Poll", func(t *testing.T) {
		testResumesExactlyOnce(t, func(cl *client.Client) pgsink.Origin { return &pgsink.PollOrigin{Client: cl, Batch: 700} })
	})
	t.Run("Subscribe", func(t *testing.T) {
		testResumesExactlyOnce(t, func(cl *client.Client) pgsink.Origin {
			return &pgsink.SubscribeOrigin{Client: cl, Options: []client.SubscribeOption{client.WithCredit(700, 1<<20)}}
		})
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
	old, err := pgsink.Open(ctx, config(db, t), &pgsink.PollOrigin{Client: cl})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	newer, err := pgsink.Open(ctx, config(db, t), &pgsink.PollOrigin{Client: cl})
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
	}
	conn := db.Connect(t)
	for i, tc := range cases {
		cfg := config(db, t)
		tc.edit(&cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := pgsink.Open(ctx, cfg, &pgsink.PollOrigin{Client: cl})
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
	old, err := pgsink.Open(ctx, cfg, &pgsink.PollOrigin{Client: cl})
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
	newer, err := pgsink.Open(octx, config(db, t), &pgsink.PollOrigin{Client: cl})
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
