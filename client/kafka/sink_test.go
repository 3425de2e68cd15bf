package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/client/kafka"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fillStream appends n records k<i>/v<i> to stream, spread over its partitions by key.
func fillStream(t testing.TB, cl *client.Client, stream string, from, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := from; i < from+n; i += 500 {
		var batch []client.StreamRecord
		for j := i; j < min(i+500, from+n); j++ {
			batch = append(batch, client.StreamRecord{Key: fmt.Appendf(nil, "k%d", j), Value: fmt.Appendf(nil, "v%d", j)})
		}
		if _, err := cl.AppendBatch(ctx, stream, batch); err != nil {
			t.Fatal(err)
		}
	}
}

// readTopic reads every committed record of topic with read-committed isolation, up to
// each partition's last stable offset.
func readTopic(t testing.TB, brokers []string, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ends, err := kadm.NewClient(adm).ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	start := map[int32]kgo.Offset{}
	left := 0
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			start[o.Partition] = kgo.NewOffset().AtStart()
			left++
		}
	})
	if left == 0 {
		return nil
	}
	kc, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	var out []*kgo.Record
	done := map[int32]bool{}
	for left > 0 {
		fs := kc.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, _ := ends.Lookup(topic, r.Partition)
			if r.Offset >= end.Offset {
				return
			}
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
			if r.Offset == end.Offset-1 && !done[r.Partition] {
				done[r.Partition] = true
				left--
			}
		})
	}
	return out
}

// checkTopicOnce checks that records, read from the sink's topic, hold each of the n
// stream records exactly once, in stream offset order per stream partition.
func checkTopicOnce(t testing.TB, records []*kgo.Record, n int) {
	t.Helper()
	next := map[string]int64{}
	seen := map[string]bool{}
	for _, r := range records {
		var part, off string
		for _, h := range r.Headers {
			switch h.Key {
			case kafka.HeaderPartition:
				part = string(h.Value)
			case kafka.HeaderOffset:
				off = string(h.Value)
			}
		}
		o, err := strconv.ParseInt(off, 10, 64)
		if err != nil {
			t.Fatalf("record %s/%d: offset header %q", r.Topic, r.Offset, off)
		}
		if seen[string(r.Value)] || o < next[part] {
			t.Fatalf("stream record %s/%d (%s) written twice", part, o, r.Value)
		}
		seen[string(r.Value)], next[part] = true, o+1
	}
	if len(seen) != n {
		t.Fatalf("%d distinct records in the topic, want %d", len(seen), n)
	}
	t.Logf("%d records, each exactly once, in offset order per stream partition", len(seen))
}

func sinkConfig(t testing.TB, brokers []string) kafka.SinkConfig {
	cfg := kafka.DefaultSinkConfig()
	cfg.Brokers, cfg.Stream, cfg.Topic, cfg.Name = brokers, "out", "t", "snk"
	cfg.BatchRecords = 250
	cfg.TransactionTimeout = 30 * time.Second
	cfg.Logger = testutil.Logger(t, slog.LevelInfo)
	return cfg
}

// sinkRun runs a sink in the background under ctx (cancel ends it).
type sinkRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func startSink(t testing.TB, ctx context.Context, cancel context.CancelFunc, cl *client.Client, cfg kafka.SinkConfig) *sinkRun {
	t.Helper()
	s, err := kafka.NewSink(cl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &sinkRun{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = s.Run(ctx)
	}()
	t.Cleanup(func() { r.stop() })
	return r
}

func (r *sinkRun) stop() error {
	r.cancel()
	<-r.done
	return r.err
}

// waitTopic waits until the topic holds at least n committed records.
func waitTopic(t testing.TB, brokers []string, topic string, n int) {
	t.Helper()
	testutil.WaitFor(t, 2*time.Minute, func() error {
		if got := len(readTopic(t, brokers, topic)); got < n {
			return fmt.Errorf("%d of %d records in %s", got, n, topic)
		}
		return nil
	})
}

// TestSinkExactlyOnceAcrossKills copies 10,000 stream records into Kafka while the sink
// is killed and restarted many times — right after a transaction committed, and at
// random moments — with more records appended between runs. The topic, read with
// read-committed isolation, must hold each record exactly once. The planted bug
// lockstep_kafka_splitstep (progress committed in a transaction of its own) fails it.
func TestSinkExactlyOnceAcrossKills(t *testing.T) {
	brokers := broker(t, 4, "t", "t.progress")
	cl := lockstep(t, "out")
	rng := rand.New(rand.NewPCG(3, 4))
	for run := range 8 {
		fillStream(t, cl, "out", run*1250, 1250)
		cfg := sinkConfig(t, brokers)
		ctx, cancel := context.WithCancel(context.Background())
		killed := make(chan struct{})
		var once sync.Once
		var commits atomic.Int64
		killAt := int64(1 + rng.IntN(8))
		if run%2 == 0 {
			kafka.SetAfterCommit(&cfg, func(int, uint64) {
				if commits.Add(1) == killAt {
					once.Do(func() { cancel(); close(killed) })
				}
			})
		}
		r := startSink(t, ctx, cancel, cl, cfg)
		if run%2 == 0 {
			select {
			case <-killed:
			case <-time.After(time.Minute):
				t.Fatalf("run %d: no commit %d", run, killAt)
			}
		} else {
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond) // a kill at a random moment
		}
		if err := r.stop(); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := startSink(t, ctx, cancel, cl, sinkConfig(t, brokers))
	waitTopic(t, brokers, "t", 10_000)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	checkTopicOnce(t, readTopic(t, brokers, "t"), 10_000)
}

// TestSinkZombiesFenced: one instance paused right after a commit, a second paused
// inside an open transaction, a third takes over and copies everything; then both
// zombies wake up. Each must stop with ErrFenced having added nothing (the open
// transaction aborted by the broker when the third took the transactional id). The
// planted bug lockstep_kafka_splitstep doubles the first zombie's committed batch.
func TestSinkZombiesFenced(t *testing.T) {
	brokers := broker(t, 4, "t", "t.progress")
	cl := lockstep(t, "out")
	fillStream(t, cl, "out", 0, 3000)

	pause := func(cfg *kafka.SinkConfig, after bool) (paused chan struct{}, release func()) {
		paused, released := make(chan struct{}), make(chan struct{})
		var once, releaseOnce sync.Once
		release = func() { releaseOnce.Do(func() { close(released) }) }
		t.Cleanup(release) // before the sinks' own cleanups, which wait for them
		hook := func(p int) {
			if p == 0 {
				once.Do(func() { close(paused); <-released })
			}
		}
		if after {
			kafka.SetAfterCommit(cfg, func(p int, _ uint64) { hook(p) })
		} else {
			kafka.SetBeforeCommit(cfg, hook)
		}
		return paused, release
	}
	cfgA := sinkConfig(t, brokers)
	cfgA.Partitions = []int{0}
	pausedA, releaseA := pause(&cfgA, true)
	ctxA, cancelA := context.WithCancel(context.Background())
	a := startSink(t, ctxA, cancelA, cl, cfgA)
	<-pausedA

	cfgB := sinkConfig(t, brokers)
	cfgB.Partitions = []int{0}
	pausedB, releaseB := pause(&cfgB, false)
	ctxB, cancelB := context.WithCancel(context.Background())
	b := startSink(t, ctxB, cancelB, cl, cfgB)
	<-pausedB

	ctxC, cancelC := context.WithCancel(context.Background())
	c := startSink(t, ctxC, cancelC, cl, sinkConfig(t, brokers))
	testutil.WaitFor(t, 2*time.Minute, func() error {
		select {
		case <-c.done:
			t.Fatalf("the replacement stopped: %v", c.err)
		default:
		}
		if got := len(readTopic(t, brokers, "t")); got < 3000 {
			return fmt.Errorf("%d of 3000 records in t", got)
		}
		return nil
	})
	releaseA()
	releaseB()
	<-a.done
	<-b.done
	for i, r := range []*sinkRun{a, b} {
		if !errors.Is(r.err, kafka.ErrFenced) {
			t.Errorf("zombie %d: got %v, want ErrFenced", i, r.err)
		} else {
			t.Logf("zombie %d: %v", i, r.err)
		}
	}
	fillStream(t, cl, "out", 3000, 500)
	waitTopic(t, brokers, "t", 3500)
	if err := c.stop(); err != nil {
		t.Fatal(err)
	}
	checkTopicOnce(t, readTopic(t, brokers, "t"), 3500)
}

// TestSinkRestartsAfterRefusedTransaction: the broker refuses three of the sink's
// commits with INVALID_TXN_STATE, leaving their transactions open (kfake answered one so
// after a fenced zombie, closing, aborted its replacement's transaction: CI run 33). The
// partition restarts with a new producer, which aborts the open transaction, and the
// topic still holds each record exactly once; the instance does not stop.
func TestSinkRestartsAfterRefusedTransaction(t *testing.T) {
	c := brokerCluster(t, 4, "t", "t.progress")
	brokers := c.ListenAddrs()
	cl := lockstep(t, "out")
	fillStream(t, cl, "out", 0, 2000)
	var refused atomic.Int64
	refuse := func(req kmsg.Request) (kmsg.Response, error, bool) {
		end := req.(*kmsg.EndTxnRequest)
		if !end.Commit || refused.Load() >= 3 {
			return nil, nil, false
		}
		c.KeepControl()
		refused.Add(1)
		resp := end.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.InvalidTxnState.Code
		return resp, nil, true
	}
	cfg := sinkConfig(t, brokers)
	var armed sync.Once
	kafka.SetAfterCommit(&cfg, func(int, uint64) {
		armed.Do(func() { c.ControlKey(int16(kmsg.EndTxn), refuse) })
	})
	ctx, cancel := context.WithCancel(context.Background())
	r := startSink(t, ctx, cancel, cl, cfg)
	testutil.WaitFor(t, 2*time.Minute, func() error {
		select {
		case <-r.done:
			t.Fatalf("the sink stopped: %v", r.err)
		default:
		}
		if got := len(readTopic(t, brokers, "t")); got < 2000 {
			return fmt.Errorf("%d of 2000 records in t", got)
		}
		return nil
	})
	if refused.Load() == 0 {
		t.Fatal("no produce was refused: the test tested nothing")
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	checkTopicOnce(t, readTopic(t, brokers, "t"), 2000)
}

// TestSinkStopsAfterRestartsWithoutCommit: a broker that refuses every commit gets the
// partition restarted maxRestarts times, then the sink stops with the refusal and the
// topic holds nothing.
func TestSinkStopsAfterRestartsWithoutCommit(t *testing.T) {
	c := brokerCluster(t, 1, "t", "t.progress")
	brokers := c.ListenAddrs()
	cl := lockstep(t, "out")
	fillStream(t, cl, "out", 0, 100)
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		end := req.(*kmsg.EndTxnRequest)
		if !end.Commit {
			return nil, nil, false
		}
		c.KeepControl()
		resp := end.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.InvalidTxnState.Code
		return resp, nil, true
	})
	cfg := sinkConfig(t, brokers)
	cfg.Partitions = []int{0}
	s, err := kafka.NewSink(cl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Run(ctx); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("Run: %v, want INVALID_TXN_STATE after the restarts", err)
	}
	if got := len(readTopic(t, brokers, "t")); got != 0 {
		t.Fatalf("%d records committed, want none", got)
	}
}

// TestSinkBadInput: an unreachable broker, a missing topic or progress topic, a
// progress topic with too few partitions and a missing stream fail Run with their typed
// error and write nothing; a bad configuration fails NewSink.
func TestSinkBadInput(t *testing.T) {
	brokers := broker(t, 1, "t", "t.progress", "small", "small.progress")
	cl := lockstep(t, "out")
	fillStream(t, cl, "out", 0, 100)
	dead := testutil.FreeAddrs(t, 1)
	cases := []struct {
		name string
		edit func(*kafka.SinkConfig)
		want error
	}{
		{"unreachable broker", func(c *kafka.SinkConfig) { c.Brokers = dead; c.Timeout = 2 * time.Second }, kafka.ErrUnreachable},
		{"missing topic", func(c *kafka.SinkConfig) { c.Topic = "nope" }, kafka.ErrUnknownTopic},
		{"missing progress topic", func(c *kafka.SinkConfig) { c.ProgressTopic = "nope" }, kafka.ErrUnknownTopic},
		{"progress topic too small", func(c *kafka.SinkConfig) { c.Topic = "small" }, kafka.ErrProgress},
		{"missing stream", func(c *kafka.SinkConfig) { c.Stream = "nope" }, kafka.ErrUnknownStream},
	}
	for i, tc := range cases {
		cfg := sinkConfig(t, brokers)
		tc.edit(&cfg)
		s, err := kafka.NewSink(cl, cfg)
		if err != nil {
			t.Fatalf("#%d %s: %v", i, tc.name, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = s.Run(ctx)
		cancel()
		if !errors.Is(err, tc.want) {
			t.Errorf("#%d %s: got %v, want %v", i, tc.name, err, tc.want)
		} else {
			t.Logf("#%d %s: %v", i, tc.name, err)
		}
	}
	for i, edit := range []func(*kafka.SinkConfig){
		func(c *kafka.SinkConfig) { c.Brokers = nil },
		func(c *kafka.SinkConfig) { c.ProgressTopic = c.Topic },
		func(c *kafka.SinkConfig) { c.TransactionTimeout = time.Millisecond },
	} {
		cfg := sinkConfig(t, brokers)
		edit(&cfg)
		if _, err := kafka.NewSink(cl, cfg); !errors.Is(err, kafka.ErrConfig) {
			t.Errorf("#%d: got %v, want ErrConfig", i, err)
		}
	}
	for _, topic := range []string{"t", "small"} {
		if n := len(readTopic(t, brokers, topic)); n != 0 {
			t.Fatalf("%d records in %s written by refused sinks", n, topic)
		}
	}
}
