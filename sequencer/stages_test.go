package sequencer

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestStageTimings: after a burst of proposals on a three-node cluster, every stage of
// the commit round has been timed where it happens: queue, raft, reply and leader persist
// on the leader, a replication round trip to each follower, follower persist on each
// follower; and the histogram buckets add up to the count.
func TestStageTimings(t *testing.T) {
	nodes, leader := newCluster(t, 3, nil)
	const n = 300
	tr := newTracker(t, n)
	for i := range n {
		if err := leader.seq.Submit(tr.proposal(fmt.Sprintf("p%d", i))); err != nil {
			t.Fatalf("Submit: %v", err)
		}
	}
	for range n {
		select {
		case <-tr.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("outcomes missing")
		}
	}
	waitSameState(t, leader, nodes...)

	lt := leader.seq.StageTimings()
	batches := leader.seq.Stats().Batches
	for name, h := range map[string]StageHistogram{"queue": lt.Queue, "raft": lt.Raft, "reply": lt.Reply, "leader persist": lt.LeaderPersist} {
		checkHistogram(t, "leader "+name, h)
		if h.Count < batches {
			t.Errorf("leader %s: %d observations, want at least the %d batches", name, h.Count, batches)
		}
	}
	for _, nd := range nodes {
		if nd == leader {
			continue
		}
		checkHistogram(t, "replication to "+nd.id, lt.Replication[nd.id])
		ft := nd.seq.StageTimings()
		checkHistogram(t, nd.id+" follower persist", ft.FollowerPersist)
		if ft.LeaderPersist.Count != 0 || len(ft.Replication) != 0 || ft.Queue.Count != 0 {
			t.Errorf("follower %s timed leader stages: %+v", nd.id, ft)
		}
	}
	if len(lt.Replication) != len(nodes)-1 {
		t.Errorf("leader timed replication to %d peers, want %d", len(lt.Replication), len(nodes)-1)
	}
	t.Logf("means: queue %v, raft %v, reply %v, leader persist %v", lt.Queue.Mean(), lt.Raft.Mean(), lt.Reply.Mean(), lt.LeaderPersist.Mean())
}

// checkHistogram fails unless h has observations of non-zero total time whose buckets
// add up to its count.
func checkHistogram(t *testing.T, name string, h StageHistogram) {
	t.Helper()
	var sum uint64
	for _, c := range h.Counts {
		sum += c
	}
	if h.Count == 0 || h.Sum <= 0 || sum != h.Count {
		t.Errorf("%s: count %d, sum %v, buckets %v", name, h.Count, h.Sum, h.Counts)
	}
}

// TestDurHistBuckets: an observation lands in the first bucket whose bound is at least
// its duration, and past the last bound in the overflow bucket.
func TestDurHistBuckets(t *testing.T) {
	var h durHist
	for _, d := range []time.Duration{0, StageBuckets[0], StageBuckets[0] + 1, StageBuckets[3], StageBuckets[len(StageBuckets)-1] + 1} {
		h.observe(d)
	}
	s := h.snapshot()
	want := [len(s.Counts)]uint64{0: 2, 1: 1, 3: 1, len(s.Counts) - 1: 1}
	if s.Counts != want || s.Count != 5 {
		t.Errorf("counts %v (count %d), want %v", s.Counts, s.Count, want)
	}
}

// TestTimedPipeline: a pipelined AppendEntries carrying entries is timed when its
// response arrives and then reaches the consumer; one without entries passes untimed;
// Close ends the forwarding goroutine.
func TestTimedPipeline(t *testing.T) {
	_, a := raft.NewInmemTransport("a")
	_, b := raft.NewInmemTransport("b")
	a.Connect("b", b)
	stop, done := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(stop); <-done; a.Close(); b.Close() })
	go func() {
		defer close(done)
		for {
			select {
			case rpc := <-b.Consumer():
				rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
			case <-stop:
				return
			}
		}
	}()
	timers := new(stageTimers)
	p, err := timed(timers, a).AppendEntriesPipeline("b", "b")
	if err != nil {
		t.Fatal(err)
	}
	for _, entries := range [][]*raft.Log{{{Index: 1, Term: 1}}, nil} {
		if _, err := p.AppendEntries(&raft.AppendEntriesRequest{Term: 1, Entries: entries}, new(raft.AppendEntriesResponse)); err != nil {
			t.Fatal(err)
		}
		select {
		case f := <-p.Consumer():
			if f.Error() != nil || !f.Response().Success {
				t.Fatalf("response: %v %+v", f.Error(), f.Response())
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no response through the timed pipeline")
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	st := timers.replication["b"].snapshot()
	if len(timers.replication) != 1 || st.Count != 1 || st.Sum <= 0 {
		t.Errorf("replication timings: %d peers, peer b %+v; want one timed round trip to b", len(timers.replication), st)
	}
}
