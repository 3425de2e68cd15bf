package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client/kafka"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSinkZombieWokenAfterTakeover: instance A, copying stream partition 0, is paused
// inside a transaction just before its commit; instance C, copying all partitions, takes
// partition 0's transactional id and is paused there right after, before it starts a
// transaction of its own (the gap CI run 37 hit with SIGSTOP). A wakes
// and commits with its old epoch. A must stop with ErrFenced and C, resumed, must copy
// everything exactly once.
//
//   - "fenced": the broker answers as it should, PRODUCER_FENCED. Under KIP-890 part 2
//     kfake took A's stale commit for the retry of a newer one and answered
//     INVALID_TXN_STATE, which A treated as transient: it restarted, took the id back
//     and fenced C (transactionsV1 keeps the sink on the protocol before part 2).
//   - "refused": the broker refuses A's commit with INVALID_TXN_STATE, a transient
//     refusal. A may restart only while it still holds the id (stillOwner); it does not.
func TestSinkZombieWokenAfterTakeover(t *testing.T) {
	for _, refused := range []bool{false, true} {
		name := map[bool]string{false: "fenced", true: "refused"}[refused]
		t.Run(name, func(t *testing.T) {
			c := brokerCluster(t, 4, "t", "t.progress")
			brokers := c.ListenAddrs()
			cl := lockstep(t, "out")
			fillStream(t, cl, "out", 0, 600)

			pauseOnce := func(set func(*kafka.SinkConfig, func(int)), cfg *kafka.SinkConfig) (paused chan struct{}, release func()) {
				paused, released := make(chan struct{}), make(chan struct{})
				var once, releaseOnce sync.Once
				release = func() { releaseOnce.Do(func() { close(released) }) }
				set(cfg, func(p int) {
					if p == 0 {
						once.Do(func() { close(paused); <-released })
					}
				})
				return paused, release
			}
			cfgA := sinkConfig(t, brokers)
			cfgA.Partitions = []int{0}
			pausedA, releaseA := pauseOnce(kafka.SetBeforeCommit, &cfgA)
			ctxA, cancelA := context.WithCancel(context.Background())
			a := startSink(t, ctxA, cancelA, cl, cfgA)
			t.Cleanup(releaseA) // before the sink's own cleanup, which waits for it
			<-pausedA

			cfgC := sinkConfig(t, brokers)
			pausedC, releaseC := pauseOnce(kafka.SetAfterInit, &cfgC)
			ctxC, cancelC := context.WithCancel(context.Background())
			cRun := startSink(t, ctxC, cancelC, cl, cfgC)
			t.Cleanup(releaseC)
			<-pausedC

			if refused {
				c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
					end := req.(*kmsg.EndTxnRequest)
					if end.TransactionalID != "snk-0" {
						return nil, nil, false
					}
					resp := end.ResponseKind().(*kmsg.EndTxnResponse)
					resp.ErrorCode = kerr.InvalidTxnState.Code
					return resp, nil, true // once: A's commit, the only EndTxn of snk-0 before C resumes
				})
			}
			releaseA()
			select {
			case <-a.done:
			case <-time.After(time.Minute):
				t.Fatal("the zombie did not stop")
			}
			if !errors.Is(a.err, kafka.ErrFenced) {
				t.Fatalf("zombie: %v, want ErrFenced", a.err)
			}
			if !refused && !errors.Is(a.err, kerr.ProducerFenced) {
				t.Fatalf("zombie: %v, want the broker's PRODUCER_FENCED", a.err)
			}
			t.Logf("zombie: %v", a.err)

			releaseC()
			testutil.WaitFor(t, 2*time.Minute, func() error {
				select {
				case <-cRun.done:
					t.Fatalf("the replacement stopped: %v", cRun.err)
				default:
				}
				if got := len(readTopic(t, brokers, "t")); got < 600 {
					return fmt.Errorf("%d of 600 records in t", got)
				}
				return nil
			})
			if err := cRun.stop(); err != nil {
				t.Fatal(err)
			}
			checkTopicOnce(t, readTopic(t, brokers, "t"), 600)
		})
	}
}
