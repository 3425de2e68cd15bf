package kafka_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/client/kafka"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// lockstep starts a one-node in-process cluster with the given streams and returns a
// client of it.
func lockstep(t testing.TB, streams ...string) *client.Client {
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
	cl, err := client.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	for _, s := range streams {
		if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: s}); err != nil {
			t.Fatal(err)
		}
	}
	return cl
}

// broker starts a kfake Kafka cluster in the test process (Apache Kafka cannot be
// installed here) with each topic of partitions partitions.
func broker(t testing.TB, partitions int, topics ...string) []string {
	t.Helper()
	return brokerCluster(t, partitions, topics...).ListenAddrs()
}

// brokerCluster is broker returning the cluster, for tests that control its answers.
func brokerCluster(t testing.TB, partitions int, topics ...string) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(partitions), topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// producer is a transactional Kafka producer of numbered records: record i of partition
// p has the value "p<p>-<i>" padded to 100 bytes.
type producer struct {
	cl    *kgo.Client
	topic string
	next  map[int32]int
}

func newProducer(t testing.TB, brokers []string, topic string) *producer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID("test-producer-"+topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &producer{cl: cl, topic: topic, next: map[int32]int{}}
}

func recordValue(p int32, i int) []byte {
	return fmt.Appendf(nil, "p%d-%-96d", p, i)[:100]
}

// txn produces n records to each of partitions in one transaction, committed or
// (commit false) aborted; an aborted transaction's records do not count.
func (pr *producer) txn(t testing.TB, partitions []int32, n int, commit bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pr.cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, p := range partitions {
		for j := range n {
			i := pr.next[p] + j
			v := recordValue(p, i)
			if !commit {
				v = fmt.Appendf(nil, "aborted-p%d-%d", p, i)
			}
			pr.cl.Produce(ctx, &kgo.Record{Partition: p, Key: fmt.Appendf(nil, "k%d", i), Value: v}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Error(err)
				}
			})
		}
	}
	if err := pr.cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pr.cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatal(err)
	}
	if commit {
		for _, p := range partitions {
			pr.next[p] += n
		}
	}
}

// readStream returns every record of stream, partition by partition.
func readStream(t testing.TB, cl *client.Client, stream string) []client.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	desc, err := cl.Streams().Describe(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	var out []client.Record
	for _, p := range desc.Partitions {
		for off := p.FirstOffset; off < p.NextOffset; {
			recs, next, err := cl.ReadStream(ctx, stream, int(p.Partition), off, 1000)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, recs...)
			off = next
		}
	}
	return out
}

// worker runs a Source in the background; stop cancels it and returns Run's error.
type worker struct {
	src    *kafka.Source
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func startWorker(t testing.TB, cl *client.Client, cfg kafka.SourceConfig) *worker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	return startWorkerCtx(t, ctx, cancel, cl, cfg)
}

// startWorkerCtx is startWorker under ctx, which cancel ends (a test's hook kills the
// worker with it).
func startWorkerCtx(t testing.TB, ctx context.Context, cancel context.CancelFunc, cl *client.Client, cfg kafka.SourceConfig) *worker {
	t.Helper()
	src, err := kafka.NewSource(cl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := &worker{src: src, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		w.err = src.Run(ctx)
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

func (w *worker) stop() error {
	w.cancel()
	<-w.done
	return w.err
}

// sourceConfig is the tests' source: topic "in" into stream "in".
func sourceConfig(t testing.TB, brokers []string, member string) kafka.SourceConfig {
	cfg := kafka.DefaultSourceConfig()
	cfg.Brokers, cfg.Topic, cfg.Name, cfg.Stream, cfg.Member = brokers, "in", "src", "in", member
	cfg.BatchRecords = 300
	cfg.SessionTimeout = 3 * time.Second
	cfg.Logger = testutil.Logger(t, slog.LevelDebug)
	return cfg
}

// waitCaughtUp waits until the source has stored, for every partition, the end of its
// committed records.
func waitCaughtUp(t testing.TB, cl *client.Client, brokers []string) {
	t.Helper()
	testutil.WaitFor(t, 2*time.Minute, func() error {
		lags, err := kafka.SourceStatus(context.Background(), cl, brokers, "src", "in", 10*time.Second)
		if err != nil {
			return err
		}
		for _, l := range lags {
			if l.End < 0 || l.Next < l.End {
				return fmt.Errorf("partition %d: next %d, end %d", l.Partition, l.Next, l.End)
			}
		}
		return nil
	})
}

// checkExactlyOnce checks that the stream holds, per Kafka partition, records 0..want-1
// of the producer exactly once and in order (all of a source's records land on one
// Lockstep partition, in Kafka order per Kafka partition).
func checkExactlyOnce(t testing.TB, recs []client.Record, want map[int32]int) {
	t.Helper()
	got := map[int32]int{}
	total := 0
	for _, r := range recs {
		var p int32
		var i int
		if _, err := fmt.Sscanf(string(r.Data), "p%d-%d", &p, &i); err != nil {
			t.Fatalf("record %q: %v", r.Data, err)
		}
		if i != got[p] {
			t.Fatalf("Kafka partition %d: record %d where %d was due (a double or a gap)", p, i, got[p])
		}
		got[p]++
		total++
	}
	for p, n := range want {
		if got[p] != n {
			t.Errorf("Kafka partition %d: %d records, want %d", p, got[p], n)
		}
	}
	t.Logf("%d records, each exactly once, in order per Kafka partition", total)
}
