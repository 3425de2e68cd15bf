package kafka_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client/kafka"
	"github.com/lockstepdb/lockstep/internal/testutil"
)

// TestSourceExactlyOnceAcrossKills brings 10,000+ committed Kafka records (with aborted
// transactions among them) into a stream while the worker is killed and restarted many
// times: right after a batch's exactly-once step returned (where an at-least-once
// connector would lose its offset), and at random moments, with more records produced
// between the runs. The stream must hold each committed record exactly once, in order
// per Kafka partition, and no aborted one (read-committed). The planted bug
// lockstep_kafka_splitstep (offset stored in a step of its own) fails it.
func TestSourceExactlyOnceAcrossKills(t *testing.T) {
	brokers := broker(t, 4, "in")
	cl := lockstep(t, "in", "in.dead")
	pr := newProducer(t, brokers, "in")
	all := []int32{0, 1, 2, 3}
	pr.txn(t, all, 1500, true)
	pr.txn(t, all, 100, false)
	pr.txn(t, all, 1000, true)
	rng := rand.New(rand.NewPCG(1, 2))
	for run := range 8 {
		cfg := sourceConfig(t, brokers, "w")
		ctx, cancel := context.WithCancel(context.Background())
		var batches atomic.Int64
		killAt := int64(1 + rng.IntN(6))
		killed := make(chan struct{})
		var once sync.Once
		if run%2 == 0 {
			// Killed right after the nth step returned, before the worker goes on. The
			// runs before may have caught up (a fast machine takes the whole topic within
			// an odd run's random moment): fresh records make the nth step come.
			pr.txn(t, all, 2*cfg.BatchRecords, true)
			kafka.SetAfterAppend(&cfg, func(int32, int64) {
				if batches.Add(1) == killAt {
					once.Do(func() { cancel(); close(killed) })
				}
			})
		}
		w := startWorkerCtx(t, ctx, cancel, cl, cfg)
		if run%2 == 0 {
			select {
			case <-killed:
			case <-time.After(time.Minute):
				t.Fatalf("run %d: the worker did not reach batch %d", run, killAt)
			}
		} else {
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond) // a kill at a random moment
		}
		if err := w.stop(); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if run == 3 {
			pr.txn(t, all, 50, false)
			pr.txn(t, all, 300, true)
		}
	}
	w := startWorker(t, cl, sourceConfig(t, brokers, "w"))
	waitCaughtUp(t, cl, brokers)
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, readStream(t, cl, "in"), pr.next)
	if total := pr.next[0] * 4; total < 10_000 {
		t.Fatalf("only %d records produced", total)
	}
}

// TestSourceZombieAddsNothing pauses a worker holding a batch it has read but not
// appended (a SIGSTOP between fetch and append), lets its replacement — a new
// incarnation of the same member, hence a new generation — bring in everything, then
// resumes it: its stale batch must be refused (generation and stored offset), adding
// nothing. The planted bug lockstep_kafka_splitstep (records appended unfenced) fails it.
func TestSourceZombieAddsNothing(t *testing.T) {
	brokers := broker(t, 2, "in")
	cl := lockstep(t, "in", "in.dead")
	pr := newProducer(t, brokers, "in")
	pr.txn(t, []int32{0, 1}, 1000, true)

	cfg := sourceConfig(t, brokers, "w")
	paused, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	kafka.SetBeforeAppend(&cfg, func(int32) {
		once.Do(func() {
			close(paused)
			<-release
		})
	})
	zombie := startWorker(t, cl, cfg)
	select {
	case <-paused:
	case <-time.After(time.Minute):
		t.Fatal("the first worker never fetched a batch")
	}
	replacement := startWorker(t, cl, sourceConfig(t, brokers, "w"))
	waitCaughtUp(t, cl, brokers)
	close(release) // the zombie wakes up and appends its stale batch, or tries to
	pr.txn(t, []int32{0, 1}, 200, true)
	waitCaughtUp(t, cl, brokers)
	if err := replacement.stop(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.stop(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, readStream(t, cl, "in"), pr.next)
}

// TestSourceBadInput: an unreachable broker, a missing topic, a missing stream and a bad
// configuration fail Run or NewSource with their typed error and append nothing.
func TestSourceBadInput(t *testing.T) {
	brokers := broker(t, 1, "in")
	cl := lockstep(t, "in", "in.dead")
	dead := testutil.FreeAddrs(t, 1)
	cases := []struct {
		name string
		edit func(*kafka.SourceConfig)
		want error
	}{
		{"unreachable broker", func(c *kafka.SourceConfig) { c.Brokers = dead; c.Timeout = 2 * time.Second }, kafka.ErrUnreachable},
		{"missing topic", func(c *kafka.SourceConfig) { c.Topic = "nope" }, kafka.ErrUnknownTopic},
		{"missing stream", func(c *kafka.SourceConfig) { c.Stream = "nope" }, kafka.ErrUnknownStream},
		{"missing dead-letter stream", func(c *kafka.SourceConfig) { c.DeadLetter = "nope" }, kafka.ErrUnknownStream},
	}
	for i, tc := range cases {
		cfg := sourceConfig(t, brokers, "w")
		tc.edit(&cfg)
		src, err := kafka.NewSource(cl, cfg)
		if err != nil {
			t.Fatalf("#%d %s: %v", i, tc.name, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = src.Run(ctx)
		cancel()
		if !errors.Is(err, tc.want) {
			t.Errorf("#%d %s: got %v, want %v", i, tc.name, err, tc.want)
		} else {
			t.Logf("#%d %s: %v", i, tc.name, err)
		}
	}
	for i, edit := range []func(*kafka.SourceConfig){
		func(c *kafka.SourceConfig) { c.Brokers = nil },
		func(c *kafka.SourceConfig) { c.Member = "" },
		func(c *kafka.SourceConfig) { c.Format = "avro" },
		func(c *kafka.SourceConfig) { c.BatchBytes = 2 << 20 },
	} {
		cfg := sourceConfig(t, brokers, "w")
		edit(&cfg)
		if _, err := kafka.NewSource(cl, cfg); !errors.Is(err, kafka.ErrConfig) {
			t.Errorf("#%d: got %v, want ErrConfig", i, err)
		}
	}
	if n := len(readStream(t, cl, "in")) + len(readStream(t, cl, "in.dead")); n != 0 {
		t.Fatalf("%d records appended by refused sources", n)
	}
}
