package system

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/jepsen"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaSinkFixture: node processes with stream "s", a kfake broker with topics "t" and
// "t.progress" (4 partitions each), and `lockstep sink kafka` processes.
type kafkaSinkFixture struct {
	sinkFixture
	brokers []string
	runs    int
}

func newKafkaSinkFixture(t *testing.T) *kafkaSinkFixture {
	t.Helper()
	kf := newKafkaFixture(t) // the cluster, its client and a broker of its own (unused)
	f := &kafkaSinkFixture{sinkFixture: kf.sinkFixture}
	if err := f.cl.Streams().Create(context.Background(), builtin.StreamDefinition{Name: "s"}); err != nil {
		t.Fatal(err)
	}
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "t", "t.progress"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	f.brokers = k.ListenAddrs()
	return f
}

func (f *kafkaSinkFixture) startKafkaSink(t *testing.T) *jepsen.Process {
	t.Helper()
	f.runs++
	args := []string{"sink", "kafka", "--stream", "s", "--brokers", strings.Join(f.brokers, ","), "--topic", "t",
		"--name", "snk", "--batch", "300", "--addr", f.c.AddrFlag(), "--timeout", "20s"}
	p, err := jepsen.StartProcess(filepath.Join(t.TempDir(), fmt.Sprintf("ksink%d.log", f.runs)), proctest.Env(), nil, f.bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("kafka sink %d", f.runs)
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

// topicValues reads topic "t" with read-committed isolation up to every partition's
// last stable offset and returns the records' stream positions "partition/offset" (from
// the sink's headers).
func (f *kafkaSinkFixture) topicValues(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(f.brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ends, err := kadm.NewClient(adm).ListCommittedOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	start, left := map[int32]kgo.Offset{}, 0
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			start[o.Partition] = kgo.NewOffset().AtStart()
			left++
		}
	})
	if left == 0 {
		return nil
	}
	kc, err := kgo.NewClient(kgo.SeedBrokers(f.brokers...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": start}))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	var out []string
	for left > 0 {
		fs := kc.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, _ := ends.Lookup("t", r.Partition)
			if r.Offset >= end.Offset {
				return
			}
			if !r.Attrs.IsControl() {
				var part, off string
				for _, h := range r.Headers {
					switch h.Key {
					case "lockstep-partition":
						part = string(h.Value)
					case "lockstep-offset":
						off = string(h.Value)
					}
				}
				out = append(out, part+"/"+off)
			}
			if r.Offset == end.Offset-1 {
				left--
			}
		})
	}
	return out
}

// checkTopic checks that topic "t" holds every record of stream "s" exactly once.
func (f *kafkaSinkFixture) checkTopic(t *testing.T) {
	t.Helper()
	want := map[string]bool{}
	for _, v := range f.streamValues(t) {
		want[v] = true
	}
	seen := map[string]bool{}
	for _, v := range f.topicValues(t) {
		if seen[v] {
			t.Fatalf("record %q twice in the topic", v)
		}
		if !want[v] {
			t.Fatalf("record %q in the topic, not in the stream", v)
		}
		seen[v] = true
	}
	if len(seen) != len(want) {
		t.Fatalf("%d records in the topic, %d in the stream", len(seen), len(want))
	}
	t.Logf("%d records, each exactly once in the topic (read-committed)", len(seen))
}

// streamValues returns the positions "partition/offset" of every record of stream "s"
// (a record appended twice by a retried append is two records).
func (f *kafkaSinkFixture) streamValues(t *testing.T) []string {
	t.Helper()
	var out []string
	for id := range f.streamContents(t) {
		out = append(out, fmt.Sprintf("%d/%d", id.part, id.offset))
	}
	return out
}

// waitTopic waits until the topic holds as many records as the stream.
func (f *kafkaSinkFixture) waitTopic(t *testing.T) {
	t.Helper()
	n := len(f.streamValues(t))
	testutil.WaitFor(t, 3*time.Minute, func() error {
		if got := len(f.topicValues(t)); got < n {
			return fmt.Errorf("%d of %d records in the topic", got, n)
		}
		return nil
	})
}

// TestKafkaSinkUnderKills: Lockstep → Kafka with real processes: 20,000 records appended
// while the `lockstep sink kafka` process is killed with SIGKILL again and again and the
// leader is killed twice; the topic, read with read-committed isolation, must hold each
// record exactly once (docs/sinks.md, Kafka).
func TestKafkaSinkUnderKills(t *testing.T) {
	f := newKafkaSinkFixture(t)
	rng := rand.New(rand.NewPCG(7, 8))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for round := range 10 {
		sink := f.startKafkaSink(t)
		if err := f.appendRange(ctx, round*2000, (round+1)*2000, 250, time.Duration(rng.IntN(40))*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
		sink.Kill()
		if round == 3 || round == 7 {
			f.killAndRestartNode(t, f.leader(t))
		}
	}
	sink := f.startKafkaSink(t)
	f.waitTopic(t)
	sink.Kill()
	f.checkTopic(t)
}

// TestKafkaSinkZombieFenced: a sink process stopped with SIGSTOP, replaced by a new one
// that copies everything, then resumed: it must exit fenced, adding nothing.
func TestKafkaSinkZombieFenced(t *testing.T) {
	f := newKafkaSinkFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := f.appendRange(ctx, 0, 5000, 500, 0); err != nil {
		t.Fatal(err)
	}
	zombie := f.startKafkaSink(t)
	testutil.WaitFor(t, time.Minute, func() error {
		if len(f.topicValues(t)) == 0 {
			return fmt.Errorf("nothing written yet")
		}
		return nil
	})
	if err := zombie.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	replacement := f.startKafkaSink(t)
	if err := f.appendRange(ctx, 5000, 6000, 500, 0); err != nil {
		t.Fatal(err)
	}
	f.waitTopic(t)
	if err := zombie.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := f.appendRange(ctx, 6000, 7000, 500, 0); err != nil {
		t.Fatal(err)
	}
	f.waitTopic(t)
	select {
	case <-zombie.Exited:
		if !strings.Contains(string(zombie.Log()), "fenced") {
			t.Fatalf("the zombie exited, not fenced:\n%s", zombie.Log())
		}
	case <-time.After(time.Minute):
		t.Fatal("the zombie did not exit")
	}
	replacement.Kill()
	f.checkTopic(t)
}
