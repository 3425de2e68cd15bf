package system

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/pgtest"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/jepsen"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The pipeline tests (issue 25): Kafka (kfake, in this process) → `lockstep source kafka`
// → the SQL stream ev → the materialized view agg (an upserting GROUP BY) → `lockstep
// sink postgres --mode upsert` (the view's schema read from the cluster's catalogue) and
// `lockstep sink kafka` (the view's changelog into topic out), on three node processes.

// The pipeline's SQL, deployed through the log: ev takes the Kafka source's JSON objects
// as they are (format 'map': the source stores a JSON object as a msgpack map).
const (
	pipelineStream = `CREATE STREAM ev (k text, n bigint) WITH (key = 'k', format = 'map')`
	pipelineView   = `CREATE MATERIALIZED VIEW agg AS SELECT k, count(*) AS c, sum(n) AS total FROM ev GROUP BY k`
	// pipelineKafkaDead is the source's dead-letter stream (JSON it cannot decode); rows
	// that decode but do not fit ev's schema are the view's, in ev.dead.
	pipelineKafkaDead = "ev.kdead"
	// pipelineViewName is the view's name, the prefix of its processors' names.
	pipelineViewName = "agg"
)

// pipelineKeys is how many keys the records spread over.
const pipelineKeys = 500

// pipelineFixture is the cluster, PostgreSQL, a kfake broker with topics ev (input), out
// and out.progress (the Kafka sink's), a transactional producer, and what was produced:
// the batch answer of the view's query over the committed records, computed as they are
// produced.
type pipelineFixture struct {
	sinkFixture
	brokers []string
	prod    *kgo.Client
	seq     int                 // records produced, committed or not: record i has key k<i % pipelineKeys>
	want    map[string][2]int64 // the batch result: per key, count(*) and sum(n), committed good records
	good    int                 // committed records that fit ev
	badJSON int                 // committed records the source cannot decode (its dead letters, ev.kdead)
	badRow  int                 // committed JSON objects the view finds not to fit ev (its dead letters, ev.dead)
	procs   map[string]int      // processes started, by role, to name their logs
	// sqlSource is set when the source is CREATE SOURCE (the nodes run its workers)
	// rather than `lockstep source kafka` processes: records are then decoded into ev's
	// columns by the source (pipelineRecordSQL).
	sqlSource bool
}

func newPipelineFixture(t *testing.T, nodes int, tags ...string) *pipelineFixture {
	t.Helper()
	return newPipeline(t, nodes, false, tags...)
}

// newPipelineFixtureSQL is newPipelineFixture with the source created in SQL (CREATE
// SOURCE src INTO ev ... dead_letter = 'ev.kdead'): every node runs a worker of it, a
// member of the source's group named after the node.
func newPipelineFixtureSQL(t *testing.T, nodes int, tags ...string) *pipelineFixture {
	t.Helper()
	f := newPipeline(t, nodes, true, tags...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src := fmt.Sprintf(`CREATE SOURCE src INTO ev WITH (connector = 'kafka', brokers = '%s', topic = 'ev', format = 'json', `+
		`dead_letter = '%s', session_timeout = '3 seconds')`, strings.Join(f.brokers, ","), pipelineKafkaDead)
	if _, err := f.cl.SQL().Exec(ctx, src); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return f
}

func newPipeline(t *testing.T, nodes int, sqlSource bool, tags ...string) *pipelineFixture {
	t.Helper()
	f := &pipelineFixture{want: map[string][2]int64{}, procs: map[string]int{}, sqlSource: sqlSource}
	f.sinkFixture = *pipelineBase(t, nodes, proctest.BuildBinary(t, tags...))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, s := range []string{pipelineStream, pipelineView} {
		if _, err := f.cl.SQL().Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if err := f.cl.Streams().Create(ctx, builtin.StreamDefinition{Name: pipelineKafkaDead}); err != nil {
		t.Fatal(err)
	}
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "ev", "out", "out.progress"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	f.brokers = k.ListenAddrs()
	f.prod, err = kgo.NewClient(kgo.SeedBrokers(f.brokers...), kgo.TransactionalID("pipeline-producer"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("ev"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.prod.Close)
	return f
}

// pipelineBase is newSinkFixture's cluster, client and PostgreSQL, with the binary bin.
func pipelineBase(t *testing.T, nodes int, bin string) *sinkFixture {
	t.Helper()
	f := &sinkFixture{bin: bin, db: pgtest.New(t)}
	f.c = proctest.StartCluster(t, f.bin, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, client.Config{Addrs: strings.Split(f.c.AddrFlag(), ","), MaxRetries: -1, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	f.cl = cl
	return f
}

// pipelineRecord is the Kafka record i: every 97th does not decode as a JSON object,
// every 89th is an object that does not fit ev (a text n, a column ev lacks, or a key
// that is not its k column), the others are {"k": "k<i%keys>", "n": i%1000}.
func pipelineRecord(i int) (key, value string, good, badJSON bool) {
	k := fmt.Sprintf("k%d", i%pipelineKeys)
	switch {
	case i%97 == 13:
		return k, [...]string{`not json`, `[1, 2]`, `{"k": "x"} {}`}[i%3], false, true
	case i%89 == 7:
		return k, [...]string{fmt.Sprintf(`{"k": %q, "n": "seven"}`, k), fmt.Sprintf(`{"k": %q, "n": 1, "extra": 2}`, k),
			`{"k": "somebody-else", "n": 1}`}[i%3], false, false
	}
	v, _ := json.Marshal(map[string]any{"k": k, "n": i % 1000})
	return k, string(v), true, false
}

// Where record i ends up: a row (key, n) of ev, or a dead letter of the source
// (ev.kdead) or of the view (ev.dead).
const (
	pipelineGood = iota
	pipelineSourceDead
	pipelineViewDead
)

// pipelineOutcome is where record i ends up. The CLI source stores a JSON object as it
// is (ev's format 'map') and the view's processor checks it against ev's schema; the SQL
// source decodes it into ev's columns itself (sql/plan/ingest.go): a field that is no
// column is ignored, the record key is the k column's, and a text n is its dead letter.
func (f *pipelineFixture) pipelineOutcome(i int) (key string, n int64, outcome int) {
	k, _, good, badJSON := pipelineRecord(i)
	switch {
	case good:
		return k, int64(i % 1000), pipelineGood
	case badJSON:
		return k, 0, pipelineSourceDead
	case !f.sqlSource:
		return k, 0, pipelineViewDead
	}
	switch i % 3 {
	case 1: // {"k": k, "n": 1, "extra": 2}
		return k, 1, pipelineGood
	case 2: // {"k": "somebody-else", "n": 1}
		return "somebody-else", 1, pipelineGood
	}
	return k, 0, pipelineSourceDead // {"k": k, "n": "seven"}
}

// produce writes n records in one Kafka transaction, committed or aborted, spread over
// the topic's four partitions, and adds the committed ones to the batch result.
func (f *pipelineFixture) produce(t *testing.T, n int, commit bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for j := range n {
		i := f.seq + j
		key, value, _, _ := pipelineRecord(i)
		f.prod.Produce(ctx, &kgo.Record{Partition: int32(i % 4), Key: []byte(key), Value: []byte(value)}, nil)
	}
	if err := f.prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatal(err)
	}
	for j := range n {
		key, v, outcome := f.pipelineOutcome(f.seq + j)
		switch {
		case !commit:
		case outcome == pipelineGood:
			w := f.want[key]
			f.want[key] = [2]int64{w[0] + 1, w[1] + v}
			f.good++
		case outcome == pipelineSourceDead:
			f.badJSON++
		default:
			f.badRow++
		}
	}
	f.seq += n
}

// produceSpread produces n committed records in transactions of at most 500, pausing a
// little between them so that the workers are busy when a kill comes.
func (f *pipelineFixture) produceSpread(t *testing.T, n int) {
	t.Helper()
	for n > 0 {
		m := min(n, 500)
		f.produce(t, m, true)
		n -= m
		time.Sleep(20 * time.Millisecond)
	}
}

// start starts the process of role with args, killed (after a SIGCONT) when the test ends.
func (f *pipelineFixture) start(t *testing.T, role string, args ...string) *jepsen.Process {
	t.Helper()
	f.procs[role]++
	name := fmt.Sprintf("%s %d", role, f.procs[role])
	args = append(args, "--addr", f.c.AddrFlag(), "--timeout", "20s")
	p, err := jepsen.StartProcess(filepath.Join(t.TempDir(), strings.ReplaceAll(name, " ", "")+".log"), proctest.Env(), nil, f.bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Cmd.Process.Signal(syscall.SIGCONT)
		p.Kill()
		if strings.Contains(string(p.Log()), "DATA RACE") {
			t.Errorf("%s found a data race", name)
		}
		if t.Failed() {
			t.Logf("log of %s:\n%s", name, p.Log())
		}
	})
	return p
}

// startSource starts a worker of the Kafka source "src" (member "w": a restart takes the
// place of the one it replaces at once).
func (f *pipelineFixture) startSource(t *testing.T) *jepsen.Process {
	return f.start(t, "source", "source", "kafka", "--brokers", strings.Join(f.brokers, ","), "--topic", "ev", "--name", "src",
		"--stream", "ev", "--dead-letter", pipelineKafkaDead, "--format", "json", "--member", "w", "--batch", "500", "--session-timeout", "5s")
}

// startPGSink starts the typed PostgreSQL sink of the view, in upsert mode, its schema
// read from the cluster (no --schema).
func (f *pipelineFixture) startPGSink(t *testing.T) *jepsen.Process {
	return f.start(t, "pgsink", "sink", "postgres", "--stream", "agg", "--table", "agg", "--mode", "upsert", "--dsn", f.db.DSN, "--batch", "1024")
}

// startKafkaSink starts the Kafka sink of the view's changelog into topic out.
func (f *pipelineFixture) startKafkaSink(t *testing.T) *jepsen.Process {
	return f.start(t, "ksink", "sink", "kafka", "--stream", "agg", "--brokers", strings.Join(f.brokers, ","), "--topic", "out",
		"--name", "snk", "--batch", "500")
}

// waitSourceCaughtUp waits until `lockstep source status` shows no lag.
func (f *pipelineFixture) waitSourceCaughtUp(t *testing.T) {
	t.Helper()
	testutil.WaitFor(t, 3*time.Minute, func() error {
		lags, err := f.sourceLags(t)
		if err != nil {
			return err
		}
		for _, l := range lags {
			if err := l.caughtUp(); err != nil {
				return err
			}
		}
		return nil
	})
}

// sourceLags is `lockstep source status` of source src: per Kafka partition of topic ev,
// the stored next offset, the last stable offset and the lag.
func (f *pipelineFixture) sourceLags(t *testing.T) ([]sourceLag, error) {
	t.Helper()
	r := proctest.Run(t, f.bin, "source", "status", "--brokers", strings.Join(f.brokers, ","), "--topic", "ev", "--name", "src",
		"--output", "json", "--addr", f.c.AddrFlag())
	var lags []sourceLag
	if err := json.Unmarshal([]byte(r.Stdout), &lags); err != nil {
		return nil, fmt.Errorf("source status: %v: %v", err, r)
	}
	return lags, nil
}

// caughtUp returns nil if the source has brought in everything committed on l's partition.
func (l sourceLag) caughtUp() error {
	if l.End < 0 || l.Lag != 0 || l.Next < l.End {
		return fmt.Errorf("partition %d: next %d, end %d, lag %d", l.Partition, l.Next, l.End, l.Lag)
	}
	return nil
}

// pipelineSize is the number of records and kills of each kind of the kill run: 20,000
// and 2, or with LOCKSTEP_LONG=1 100,000 and 5 ($LOCKSTEP_PIPELINE_RECORDS overrides the
// records).
func pipelineSize(t *testing.T) (records, kills int) {
	records, kills = 20000, 2
	if os.Getenv("LOCKSTEP_LONG") == "1" {
		records, kills = 100000, 5
	}
	if s := os.Getenv("LOCKSTEP_PIPELINE_RECORDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("LOCKSTEP_PIPELINE_RECORDS=%q: want a positive number", s)
		}
		records = n
	}
	return records, kills
}

// sourceNode returns the index in f.c.Procs of the node whose worker of the SQL source
// owns the most of its group's partitions (the leader if no worker is a member yet).
func (f *pipelineFixture) sourceNode(t *testing.T) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := f.cl.Groups().Describe(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	best, most := -1, 0
	for _, m := range d.Members {
		for i, n := range f.c.Procs {
			if n.ID == m.Member && len(m.Partitions) > most {
				best, most = i, len(m.Partitions)
			}
		}
	}
	if best < 0 {
		return f.leader(t)
	}
	return best
}
