package benchmarks

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// Consumer-group rebalance time on 3 node processes: three members consume a stream that
// a producer keeps appending to (committing with group.commit after each batch), and one
// member goes — by Leave, or by stopping its heartbeats (Close) so that the group expires
// it by batch time. Two times per round, from the moment the member goes:
//
//	seen: every remaining member holds the new generation (learned by its next heartbeat)
//	work: every partition the member owned has a batch committed by its new owner
//
// The member rejoins between rounds. Session timeout 3 s, heartbeat interval 1 s.
// LeaveIdle has no producer: the remaining members learn of a leave only from their
// heartbeats, and there is no work to measure.

const (
	rebalanceGroup   = "bench"
	rebalanceStream  = "rebalance"
	rebalanceTimeout = 3 * time.Second
	rebalanceBeat    = time.Second
	rebalanceRounds  = 8
)

// commitLog records, per generation and partition, when a batch was first committed.
type commitLog struct {
	mu    sync.Mutex
	first map[uint64]map[int]time.Time
	wake  chan struct{}
}

func (l *commitLog) add(gen uint64, p int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.first[gen] == nil {
		l.first[gen] = map[int]time.Time{}
	}
	if _, ok := l.first[gen][p]; !ok {
		l.first[gen][p] = time.Now()
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// at returns when partition p was first committed in generation gen.
func (l *commitLog) at(gen uint64, p int) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.first[gen][p]
	return t, ok
}

type benchMember struct {
	cl   *client.Client
	m    *client.GroupMember
	stop context.CancelFunc
	done chan error
}

func joinBench(ctx context.Context, addrs []string, tlsCfg *tls.Config, id string, log *commitLog) (*benchMember, error) {
	cl, err := client.Dial(ctx, client.Config{Addrs: addrs, TLS: tlsCfg})
	if err != nil {
		return nil, err
	}
	m, err := cl.JoinGroup(ctx, rebalanceGroup, rebalanceStream, id,
		client.WithSessionTimeout(rebalanceTimeout), client.WithHeartbeatInterval(rebalanceBeat))
	if err != nil {
		cl.Close()
		return nil, err
	}
	cctx, stop := context.WithCancel(ctx)
	bm := &benchMember{cl: cl, m: m, stop: stop, done: make(chan error, 1)}
	go func() {
		bm.done <- m.Consume(cctx, func(ctx context.Context, b client.GroupBatch) error {
			_, err := client.InvokeAs[builtin.NoArgs](ctx, cl, builtin.GroupCommit, client.GroupKey(rebalanceGroup), b.Commit)
			if err == nil {
				log.add(b.Generation, b.Partition)
			}
			return err
		}, client.ConsumeOptions{MaxRecords: 200})
	}()
	return bm, nil
}

// end stops the member's consumer, leaving the group first if leave is set.
func (bm *benchMember) end(ctx context.Context, leave bool) error {
	defer bm.cl.Close()
	var err error
	if leave {
		err = bm.m.Leave(ctx)
	} else {
		bm.m.Close()
	}
	bm.stop()
	if cerr := <-bm.done; !errors.Is(cerr, context.Canceled) && !errors.Is(cerr, client.ErrClosed) {
		return cerr
	}
	return err
}

func BenchmarkGroupRebalanceProcs(b *testing.B) {
	b.Run("Leave", func(b *testing.B) { benchGroupRebalance(b, true, false) })
	b.Run("Expiry", func(b *testing.B) { benchGroupRebalance(b, false, false) })
	b.Run("LeaveIdle", func(b *testing.B) { benchGroupRebalance(b, true, true) })
}

func benchGroupRebalance(b *testing.B, leave, idle bool) {
	if b.N > 1 {
		b.Skip("runs once: use -benchtime 1x")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pc := startProcs(b, 3)
	addrs := pc.clientAddrs()
	admin := pc.dial(b)
	if err := admin.Streams().Create(ctx, builtin.StreamDefinition{Name: rebalanceStream, Retention: builtin.StreamRetention{MaxRecords: 100_000}}); err != nil {
		b.Fatal(err)
	}
	// The producer: 40 records every 20 ms, about 2,000 records/s over all partitions.
	prodDone := make(chan error, 1)
	go func() {
		for i := 0; ctx.Err() == nil && !idle; i++ {
			recs := make([]client.StreamRecord, 40)
			for j := range recs {
				recs[j] = client.StreamRecord{Key: []byte(fmt.Sprintf("k%d-%d", i, j)), Value: []byte("v")}
			}
			if _, err := admin.AppendBatch(ctx, rebalanceStream, recs); err != nil && ctx.Err() == nil {
				prodDone <- err
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		prodDone <- nil
	}()
	log := &commitLog{first: map[uint64]map[int]time.Time{}, wake: make(chan struct{}, 1)}
	members := map[string]*benchMember{}
	for _, id := range []string{"m1", "m2", "m3"} {
		m, err := joinBench(ctx, addrs, testutil.ClientTLS(b), id, log)
		if err != nil {
			b.Fatal(err)
		}
		members[id] = m
	}
	var seen, work []time.Duration
	b.ResetTimer()
	for round := range rebalanceRounds {
		// Wait until the three members hold one generation and have committed in it.
		gen, err := settled(ctx, members, log, idle)
		if err != nil {
			b.Fatal(err)
		}
		goer := fmt.Sprintf("m%d", 1+round%3)
		_, owned := members[goer].m.Current()
		t0 := time.Now()
		if err := members[goer].end(ctx, leave); err != nil {
			b.Fatalf("round %d: %s goes: %v", round, goer, err)
		}
		delete(members, goer)
		// seen: every remaining member holds a newer generation.
		var newGen uint64
		for _, m := range members {
			for {
				g, _ := m.m.Current()
				if g > gen {
					newGen = max(newGen, g)
					break
				}
				select {
				case <-m.m.Changed():
				case <-time.After(30 * time.Second):
					b.Fatalf("round %d: %s never saw a generation after %d", round, m.m.Member(), gen)
				}
			}
		}
		seen = append(seen, time.Since(t0))
		// work: each of the goer's partitions committed by its new owner.
		var last time.Time
		if idle {
			owned, last = nil, t0
		}
		for _, p := range owned {
			for {
				if t, ok := log.at(newGen, p); ok {
					last = later(last, t)
					break
				}
				select {
				case <-log.wake:
				case <-time.After(100 * time.Millisecond):
				case <-ctx.Done():
					b.Fatal(ctx.Err())
				}
			}
		}
		work = append(work, last.Sub(t0))
		b.Logf("round %d: %s left=%v generation %d→%d, seen %v, work %v", round, goer, leave, gen, newGen, seen[round], work[round])
		if members[goer], err = joinBench(ctx, addrs, testutil.ClientTLS(b), goer, log); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	for _, m := range members {
		if err := m.end(ctx, true); err != nil {
			b.Fatal(err)
		}
	}
	cancel()
	if err := <-prodDone; err != nil {
		b.Fatal(err)
	}
	slices.Sort(seen)
	slices.Sort(work)
	b.ReportMetric(ms(seen[len(seen)/2]), "seen-p50-ms")
	b.ReportMetric(ms(seen[len(seen)-1]), "seen-max-ms")
	if !idle {
		b.ReportMetric(ms(work[len(work)/2]), "work-p50-ms")
		b.ReportMetric(ms(work[len(work)-1]), "work-max-ms")
	}
}

// settled waits until every member holds the same generation and, unless idle, each of
// its partitions has a commit in it, and returns that generation.
func settled(ctx context.Context, members map[string]*benchMember, log *commitLog, idle bool) (uint64, error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var gen uint64
		same, done := true, true
		for _, m := range members {
			g, ps := m.m.Current()
			if gen != 0 && g != gen {
				same = false
			}
			gen = g
			for _, p := range ps {
				if _, ok := log.at(g, p); !ok && !idle {
					done = false
				}
			}
		}
		if same && done {
			return gen, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return 0, errors.New("the group did not settle within 30 s")
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
