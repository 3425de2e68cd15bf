package connect_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/client/kafka"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/sql/plan"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vmihailenco/msgpack/v5"
)

const (
	kafkaParts = 4
	clicksDDL  = `CREATE STREAM clicks (usr text, page text, n bigint, ts timestamp) WITH (key = 'usr', event_time = 'ts')`
)

// fixture is a 3-node in-process cluster, a kfake broker with the topic "clicks" and a
// root client.
type fixture struct {
	lc      *node.LocalCluster
	cl      *client.Client
	brokers []string
	prod    *kgo.Client
	next    map[int32]int // the next good record of each Kafka partition
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(kafkaParts, "clicks"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lc, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: 3, Node: node.Config{Logger: testutil.Logger(t, slog.LevelInfo)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lc.Close)
	cfg := client.DefaultConfig()
	cfg.Addrs, cfg.TLS = lc.ClientAddrs(), lc.ClientConfig().TLS
	cl, err := client.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	prod, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic("clicks"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	return &fixture{lc: lc, cl: cl, brokers: kc.ListenAddrs(), prod: prod, next: map[int32]int{}}
}

func (f *fixture) exec(t *testing.T, text string) client.ExecResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := f.cl.SQL().Exec(ctx, text)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return res
}

// produce writes n good JSON records to every Kafka partition, and with bad, after every
// tenth good one, one of each malformed kind.
func (f *fixture) produce(t *testing.T, n int, bad bool) (dead int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var recs []*kgo.Record
	for p := range int32(kafkaParts) {
		for j := range n {
			i := f.next[p] + j
			v := fmt.Sprintf(`{"usr":"p%d-%d","page":"/x","n":%d,"ts":%d,"extra":true}`, p, i, i, 1_700_000_000_000+int64(i))
			recs = append(recs, &kgo.Record{Partition: p, Key: []byte("k"), Value: []byte(v)})
			if bad && j%10 == 0 {
				for _, b := range []string{
					`{"usr":"bad","page":"/x","ts":1}`,             // missing column n
					`{"usr":"bad","page":"/x","n":"seven","ts":1}`, // wrong type
					`{"usr":"bad","page":"/x","n":1,"ts":1}{}`,     // data after the object
					`not json`,                              // not JSON
					`{"usr":null,"page":"/x","n":1,"ts":1}`, // NULL key
					`{"usr":"bad","page":"/x","n":1,"ts":"the day before"}`, // bad timestamp
				} {
					recs = append(recs, &kgo.Record{Partition: p, Value: []byte(b)})
					dead++
				}
			}
		}
		f.next[p] += n
	}
	if err := f.prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return dead
}

// read returns every record of stream.
func (f *fixture) read(t *testing.T, stream string) []client.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	desc, err := f.cl.Streams().Describe(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	var out []client.Record
	for _, p := range desc.Partitions {
		for off := p.FirstOffset; off < p.NextOffset; {
			recs, next, err := f.cl.ReadStream(ctx, stream, int(p.Partition), off, 1000)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, recs...)
			off = next
		}
	}
	return out
}

// waitCount waits until stream holds n records.
func (f *fixture) waitCount(t *testing.T, stream string, n int) {
	t.Helper()
	testutil.WaitFor(t, 2*time.Minute, func() error {
		if got := len(f.read(t, stream)); got != n {
			return fmt.Errorf("%s: %d records, want %d", stream, got, n)
		}
		return nil
	})
}

// members returns the source group's members and their stream partitions.
func (f *fixture) members(source string) (map[string][]int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := f.cl.Groups().Describe(ctx, source)
	if err != nil {
		return nil, err
	}
	out := map[string][]int32{}
	for _, m := range d.Members {
		out[m.Member] = m.Partitions
	}
	return out, nil
}

func (f *fixture) waitMembers(t *testing.T, source string, n int) map[string][]int32 {
	t.Helper()
	var got map[string][]int32
	testutil.WaitFor(t, 2*time.Minute, func() error {
		var err error
		if got, err = f.members(source); err != nil {
			return err
		}
		if len(got) != n {
			return fmt.Errorf("group %s: members %v, want %d", source, got, n)
		}
		return nil
	})
	return got
}

// checkRows checks that the typed stream holds each good record produced exactly once,
// in Kafka order per Kafka partition, decoded into its columns.
func (f *fixture) checkRows(t *testing.T, schema *plan.Schema) {
	t.Helper()
	got := map[int32]int{}
	for _, r := range f.read(t, "clicks") {
		row, err := schema.CheckRecord(r.Key, r.Data)
		if err != nil {
			t.Fatalf("record %q: %v", r.Data, err)
		}
		var p int32
		var i int
		if _, err := fmt.Sscanf(row[0].(string), "p%d-%d", &p, &i); err != nil {
			t.Fatalf("row %v: %v", row, err)
		}
		if i != got[p] || row[2].(int64) != int64(i) || row[3].(int64) != 1_700_000_000_000+int64(i) || r.EventTime.UnixMilli() != row[3].(int64) {
			t.Fatalf("Kafka partition %d: row %v (event time %v) where record %d was due (a double, a gap or a bad decoding)", p, row, r.EventTime, got[p])
		}
		got[p]++
	}
	for p, n := range f.next {
		if got[p] != n {
			t.Errorf("Kafka partition %d: %d rows, want %d", p, got[p], n)
		}
	}
}

// TestCreateSourceOnCluster: CREATE SOURCE on a 3-node cluster; every node runs a worker,
// the source's group (in the log) shares the Kafka partitions among them; JSON records
// arrive exactly once, decoded into the stream's columns; records that do not fit go to
// the dead-letter stream with the column and the reason; the node with the most
// partitions (the leader, if it is one of them) is killed and the others take its
// partitions from the stored offsets; it comes back and takes some again; DROP SOURCE
// stops every worker (DESIGN.md section 5: exactly-once, end to end).
func TestCreateSourceOnCluster(t *testing.T) {
	f := newFixture(t)
	f.exec(t, clicksDDL)
	res := f.exec(t, fmt.Sprintf(`CREATE SOURCE clicks_in INTO clicks WITH (connector = 'kafka', brokers = '%s',
	  topic = 'clicks', format = 'json', session_timeout = '2 seconds')`, strings.Join(f.brokers, ",")))
	if res.Deployed != "source:clicks_in" {
		t.Fatalf("deployed %q, want source:clicks_in", res.Deployed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rows, err := f.cl.SQL().Query(ctx, "SHOW SOURCES")
	if err != nil || len(rows.Rows) != 1 || rows.Rows[0][0] != "clicks_in" || rows.Rows[0][1] != "clicks" || rows.Rows[0][5] != "json" {
		t.Fatalf("SHOW SOURCES: %+v %v", rows, err)
	}
	schema := &plan.Schema{}
	for _, m := range f.lc.Nodes[0].FSM().SQLModules() {
		for _, s := range m.Plan.Schemas() {
			if s.Name == "clicks" {
				*schema = s
			}
		}
	}
	owners := f.waitMembers(t, "clicks_in", 3)
	t.Logf("assignment: %v", owners)

	dead := f.produce(t, 100, true)
	f.waitCount(t, "clicks", 4*100)
	f.waitCount(t, "clicks_in.dead", dead)
	f.checkRows(t, schema)
	checkDeadLetters(t, f.read(t, "clicks_in.dead"))

	// Kill the node whose worker reads the most partitions (the leader among equals).
	leader := f.lc.Leader()
	victim, most := -1, -1
	for i, n := range f.lc.Nodes {
		k := len(owners[n.ID()])
		if k > most || (k == most && i == leader) {
			victim, most = i, k
		}
	}
	t.Logf("killing %s (leader %t), which reads %v", f.lc.Nodes[victim].ID(), victim == leader, owners[f.lc.Nodes[victim].ID()])
	f.lc.Kill(victim)
	f.produce(t, 150, false)
	f.waitMembers(t, "clicks_in", 2)
	f.waitCount(t, "clicks", 4*250)
	f.checkRows(t, schema)

	if err := f.lc.Restart(victim); err != nil {
		t.Fatal(err)
	}
	f.waitMembers(t, "clicks_in", 3)
	f.produce(t, 100, false)
	f.waitCount(t, "clicks", 4*350)
	f.checkRows(t, schema)
	if got := len(f.read(t, "clicks_in.dead")); got != dead {
		t.Fatalf("%d dead letters, want %d", got, dead)
	}
	lags, err := kafka.SourceStatus(ctx, f.cl, f.brokers, "clicks_in", "clicks", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lags {
		if l.Lag != 0 {
			t.Errorf("partition %d: lag %d after catching up", l.Partition, l.Lag)
		}
	}
	checkLagMetrics(t, f.lc)

	// DROP SOURCE: every worker stops and leaves the group, and nothing more arrives.
	f.exec(t, "DROP SOURCE clicks_in")
	testutil.WaitFor(t, time.Minute, func() error {
		for _, n := range f.lc.Nodes {
			if w := n.SourceWorkers(); len(w) != 0 {
				return fmt.Errorf("node %s still runs %v", n.ID(), w)
			}
		}
		return nil
	})
	if m, err := f.members("clicks_in"); err != nil || len(m) != 0 {
		t.Fatalf("members %v after DROP SOURCE (%v)", m, err)
	}
	f.produce(t, 10, false)
	lags, err = kafka.SourceStatus(ctx, f.cl, f.brokers, "clicks_in", "clicks", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lags {
		if l.Lag != 10 {
			t.Errorf("partition %d: lag %d after DROP SOURCE and 10 more records, want 10", l.Partition, l.Lag)
		}
	}
	if got := len(f.read(t, "clicks")); got != 4*350 {
		t.Fatalf("%d records after DROP SOURCE, want %d", got, 4*350)
	}
}

// checkDeadLetters checks that every dead letter names its reason, and the column where
// one is at fault.
func checkDeadLetters(t *testing.T, recs []client.Record) {
	t.Helper()
	want := []string{"column n: missing", "column n: want an integer (bigint), got string \"seven\"", "data after the JSON object",
		"not a JSON object", "column usr: NULL in the key", "column ts: timestamp \"the day before\""}
	seen := map[string]int{}
	for _, r := range recs {
		var d kafka.DeadLetter
		if err := msgpack.Unmarshal(r.Data, &d); err != nil {
			t.Fatalf("dead letter %q: %v", r.Data, err)
		}
		if string(r.Key) != fmt.Sprintf("%s/%d/%d", d.Topic, d.Partition, d.Offset) {
			t.Fatalf("dead letter key %q for %s/%d/%d", r.Key, d.Topic, d.Partition, d.Offset)
		}
		found := false
		for _, w := range want {
			if strings.Contains(d.Reason, w) {
				seen[w]++
				found = true
			}
		}
		if !found {
			t.Fatalf("dead letter %s/%d/%d: reason %q", d.Topic, d.Partition, d.Offset, d.Reason)
		}
	}
	for _, w := range want {
		if seen[w] != len(recs)/len(want) {
			t.Errorf("%d dead letters for %q, want %d", seen[w], w, len(recs)/len(want))
		}
	}
}

// checkLagMetrics checks that the nodes export lag 0 for every Kafka partition, each
// partition on one node.
func checkLagMetrics(t *testing.T, lc *node.LocalCluster) {
	t.Helper()
	testutil.WaitFor(t, time.Minute, func() error {
		parts := map[string]int{}
		for _, n := range lc.Nodes {
			mfs, err := n.Metrics().Registry.Gather()
			if err != nil {
				return err
			}
			for _, mf := range mfs {
				if mf.GetName() != node.MetricSourceLag {
					continue
				}
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "partition" {
							if m.GetGauge().GetValue() != 0 {
								return fmt.Errorf("node %s partition %s: lag %v", n.ID(), l.GetValue(), m.GetGauge().GetValue())
							}
							parts[l.GetValue()]++
						}
					}
				}
			}
		}
		if len(parts) != kafkaParts {
			return fmt.Errorf("lag exported for partitions %v, want %d", parts, kafkaParts)
		}
		for p, k := range parts {
			if k != 1 {
				return fmt.Errorf("partition %s exported by %d nodes", p, k)
			}
		}
		return nil
	})
}

// TestCreateSourceBadInput: a bad CREATE SOURCE (unknown stream, a table, a missing
// option, a bad format, a name taken) is a clear error and changes nothing; DROP SOURCE
// of an unknown name too; a stream a source writes cannot be dropped (COMMON.md: bad
// input changes nothing).
func TestCreateSourceBadInput(t *testing.T) {
	f := newFixture(t)
	f.exec(t, clicksDDL)
	f.exec(t, "CREATE TABLE users (id text, name text) WITH (key = 'id')")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := strings.Join(f.brokers, ",")
	f.exec(t, fmt.Sprintf("CREATE SOURCE good INTO clicks WITH (connector = 'kafka', brokers = '%s', topic = 'clicks', format = 'json')", b))
	before, err := f.cl.Procedures().Deployment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ text, msg string }{
		{"CREATE SOURCE s1 INTO nowhere WITH (connector = 'kafka', brokers = '" + b + "', topic = 'clicks', format = 'json')", "INTO nowhere: no stream"},
		{"CREATE SOURCE s1 INTO users WITH (connector = 'kafka', brokers = '" + b + "', topic = 'clicks', format = 'json')", "users is a table"},
		{"CREATE SOURCE s1 INTO clicks WITH (connector = 'kafka', topic = 'clicks', format = 'json')", "needs the option brokers"},
		{"CREATE SOURCE s1 INTO clicks WITH (connector = 'kafka', brokers = '" + b + "', topic = 'clicks', format = 'avro')", "format = 'avro'"},
		{"CREATE SOURCE good INTO clicks WITH (connector = 'kafka', brokers = '" + b + "', topic = 'clicks', format = 'json')", "source good already exists"},
		{"DROP SOURCE nosuch", "no source of that name"},
		{"DROP STREAM clicks", "source good writes into clicks"},
	}
	for i, tt := range tests {
		_, err := f.cl.SQL().Exec(ctx, tt.text)
		var se *client.SQLError
		if !errors.As(err, &se) && !errors.Is(err, client.ErrBadArguments) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("#%d: %s: got %v, want an SQL error with %q", i, tt.text, err, tt.msg)
		}
	}
	after, err := f.cl.Procedures().Deployment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("the deployment changed:\n%+v\n%+v", before, after)
	}
}
