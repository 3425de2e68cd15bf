package system

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/jepsen"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The Kafka source tests run real `lockstep source kafka` processes against real node
// processes; the Kafka broker is franz-go's kfake, started in this test process (Apache
// Kafka cannot be installed here).

// kafkaFixture is a cluster of node processes with streams "in" and "in.dead", a kfake
// broker with topic "in" of 4 partitions, a transactional producer, and the binary.
type kafkaFixture struct {
	sinkFixture
	brokers string
	prod    *kgo.Client
	next    map[int32]int // committed records produced, per Kafka partition
	run     int
}

func newKafkaFixture(t *testing.T) *kafkaFixture {
	t.Helper()
	f := &kafkaFixture{next: map[int32]int{}}
	f.bin = proctest.BuildBinary(t)
	f.c = proctest.StartCluster(t, f.bin, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, client.Config{Addrs: strings.Split(f.c.AddrFlag(), ","), MaxRetries: -1, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	f.cl = cl
	for _, s := range []string{"in", "in.dead"} {
		if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: s}); err != nil {
			t.Fatal(err)
		}
	}
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "in"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	f.brokers = strings.Join(k.ListenAddrs(), ",")
	f.prod, err = kgo.NewClient(kgo.SeedBrokers(k.ListenAddrs()...), kgo.TransactionalID("system-producer"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.prod.Close)
	return f
}

// produce writes n records to every Kafka partition in one transaction, committed or
// aborted; record i of partition p has the value "p<p>-<i>".
func (f *kafkaFixture) produce(t *testing.T, n int, commit bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := range int32(4) {
		for j := range n {
			v := fmt.Sprintf("p%d-%d", p, f.next[p]+j)
			if !commit {
				v = "aborted-" + v
			}
			f.prod.Produce(ctx, &kgo.Record{Partition: p, Value: []byte(v)}, nil)
		}
	}
	if err := f.prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatal(err)
	}
	if commit {
		for p := range int32(4) {
			f.next[p] += n
		}
	}
}

// startSource starts a `lockstep source kafka` process (member "w"), killed when the
// test ends.
func (f *kafkaFixture) startSource(t *testing.T) *jepsen.Process {
	t.Helper()
	f.run++
	args := []string{"source", "kafka", "--brokers", f.brokers, "--topic", "in", "--name", "src", "--stream", "in",
		"--member", "w", "--batch", "200", "--session-timeout", "5s", "--addr", f.c.AddrFlag(), "--timeout", "20s"}
	p, err := jepsen.StartProcess(filepath.Join(t.TempDir(), fmt.Sprintf("source%d.log", f.run)), proctest.Env(), nil, f.bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("source %d", f.run)
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

// sourceLag is one row of `lockstep source status --output json`.
type sourceLag struct {
	Partition int32
	Next, End int64
	Lag       int64
}

// waitCaughtUp waits until `lockstep source status` shows no lag on any partition.
func (f *kafkaFixture) waitCaughtUp(t *testing.T) {
	t.Helper()
	testutil.WaitFor(t, 3*time.Minute, func() error {
		r := proctest.Run(t, f.bin, "source", "status", "--brokers", f.brokers, "--topic", "in", "--name", "src",
			"--output", "json", "--addr", f.c.AddrFlag())
		var lags []sourceLag
		if err := json.Unmarshal([]byte(r.Stdout), &lags); err != nil {
			return fmt.Errorf("source status: %v: %v", err, r)
		}
		for _, l := range lags {
			if l.End < 0 || l.Lag != 0 || l.Next < l.End {
				return fmt.Errorf("partition %d: next %d, end %d, lag %d", l.Partition, l.Next, l.End, l.Lag)
			}
		}
		return nil
	})
}

// checkStream checks that stream "in" holds every committed record once, in order per
// Kafka partition, and no aborted one.
func (f *kafkaFixture) checkStream(t *testing.T) {
	t.Helper()
	got := map[int32]int{}
	for _, r := range f.streamContentsOf(t, "in") {
		var p int32
		var i int
		if _, err := fmt.Sscanf(r, "p%d-%d", &p, &i); err != nil {
			t.Fatalf("record %q: %v", r, err)
		}
		if i != got[p] {
			t.Fatalf("Kafka partition %d: record %d where %d was due (a double or a gap)", p, i, got[p])
		}
		got[p]++
	}
	total := 0
	for p, n := range f.next {
		if got[p] != n {
			t.Errorf("Kafka partition %d: %d records, want %d", p, got[p], n)
		}
		total += got[p]
	}
	t.Logf("%d records, each exactly once, in order per Kafka partition", total)
}

// streamContentsOf returns the values of every record of stream, partition by partition.
func (f *kafkaFixture) streamContentsOf(t *testing.T, stream string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	desc, err := f.cl.Streams().Describe(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range desc.Partitions {
		for off := p.FirstOffset; off < p.NextOffset; {
			recs, next, err := f.cl.ReadStream(ctx, stream, int(p.Partition), off, 1000)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				out = append(out, string(r.Data))
			}
			off = next
		}
	}
	return out
}

// TestKafkaSourceUnderKills: Kafka → Lockstep with real processes: 20,000 committed
// records (aborted transactions among them) produced while the `lockstep source kafka`
// process is killed with SIGKILL again and again and the cluster's leader is killed and
// restarted twice. The stream must hold each committed record exactly once, in order per
// Kafka partition (docs/sources.md, the exactly-once argument).
func TestKafkaSourceUnderKills(t *testing.T) {
	f := newKafkaFixture(t)
	rng := rand.New(rand.NewPCG(5, 6))
	kills, nodeKills := 0, 0
	for round := range 10 {
		src := f.startSource(t)
		// Produce while the worker runs, so that the kill finds it at work.
		for range 5 {
			f.produce(t, 100, true)
			time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond)
		}
		if round%3 == 1 {
			f.produce(t, 50, false)
		}
		time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
		src.Kill()
		kills++
		if round == 3 || round == 7 {
			f.killAndRestartNode(t, f.leader(t))
			nodeKills++
		}
	}
	src := f.startSource(t)
	f.waitCaughtUp(t)
	src.Kill()
	f.checkStream(t)
	t.Logf("%d source kills, %d leader kills", kills, nodeKills)
}

// TestKafkaSourceZombieAddsNothing: a source process stopped with SIGSTOP in the middle
// of its work, replaced by a new incarnation of its member that brings everything in,
// then resumed with SIGCONT: it must add nothing.
func TestKafkaSourceZombieAddsNothing(t *testing.T) {
	f := newKafkaFixture(t)
	f.produce(t, 3000, true)
	zombie := f.startSource(t)
	testutil.WaitFor(t, time.Minute, func() error {
		if n := len(f.streamContentsOf(t, "in")); n == 0 {
			return fmt.Errorf("nothing brought in yet")
		}
		return nil
	})
	if err := zombie.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	replacement := f.startSource(t)
	f.waitCaughtUp(t)
	if err := zombie.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	f.produce(t, 500, true)
	f.waitCaughtUp(t)
	replacement.Kill()
	zombie.Kill()
	f.checkStream(t)
}
