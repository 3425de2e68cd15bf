package client

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/wire"
)

// pushRecords pushes records from offset from to to-1 of subscription sub, naming log
// index index.
func pushRecords(fc *fakeConn, sub, from, to, index uint64) {
	resp := wire.Response{Sub: sub, NextOffset: to, Index: index}
	for o := from; o < to; o++ {
		resp.Entries = append(resp.Entries, wire.StreamRecord{Offset: o, Value: []byte{byte(o)}})
	}
	fc.reply(resp)
}

// subscribeNode starts a fake node that answers pings and unsubscribes, answers each
// subscribe request with index index and, if push is set, then pushes records from the
// requested offset to push-1. It returns the node and the subscribe requests it received.
func subscribeNode(t *testing.T, id string, index, push uint64) (*fakeNode, func() []wire.Request) {
	var mu sync.Mutex
	var got []wire.Request
	n := newFakeNode(t, id, func(fc *fakeConn, req wire.Request) {
		switch req.Op {
		case wire.OpSubscribe:
			mu.Lock()
			got = append(got, req)
			mu.Unlock()
			fc.reply(wire.Response{ID: req.ID, NextOffset: req.Offset, Index: index})
			if push > 0 {
				pushRecords(fc, req.Sub, req.Offset, push, index)
			}
		case wire.OpPing, wire.OpUnsubscribe:
			fc.reply(wire.Response{ID: req.ID})
		}
	})
	return n, func() []wire.Request {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// TestSubscriptionLeavesSilentNode: a node that keeps the connection open but stops
// answering (paused, cut off) is left like a lost one: an unanswered keepalive ping moves
// the subscription to another node, which is asked to start at the next offset not
// received, at a log index that holds every record received (MinIndex).
func TestSubscriptionLeavesSilentNode(t *testing.T) {
	a := newFakeNode(t, "a", func(fc *fakeConn, req wire.Request) {
		if req.Op == wire.OpSubscribe {
			fc.reply(wire.Response{ID: req.ID, NextOffset: req.Offset, Index: 5})
			pushRecords(fc, req.Sub, 0, 3, 7)
		}
		// Pings and everything else: no answer, ever.
	})
	b, subscribesAtB := subscribeNode(t, "b", 9, 5)
	cfg := testConfig(t, a.addr, b.addr)
	cfg.RequestTimeout = 300 * time.Millisecond
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sub, err := c.Subscribe(ctx, "s", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var got []uint64
	for len(got) < 5 {
		recs, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("next after %v: %v", got, err)
		}
		for _, r := range recs {
			if r.Partition != 2 {
				t.Errorf("record %d: partition %d, want 2", r.Offset, r.Partition)
			}
			got = append(got, r.Offset)
		}
	}
	for i, o := range got {
		if o != uint64(i) {
			t.Fatalf("got offsets %v, want 0 to 4 in order", got)
		}
	}
	if atB := subscribesAtB(); len(atB) != 1 || atB[0].Offset != 3 || atB[0].MinIndex != 7 || atB[0].Partition != 2 {
		t.Fatalf("subscribe requests at b: %+v, want one from offset 3 with MinIndex 7", atB)
	}
}

// TestSubscriptionRefusesPushOverCredit: a node that pushes more records than the credit
// granted breaks the protocol; the client drops it and goes on elsewhere, and never holds
// more than its window.
func TestSubscriptionRefusesPushOverCredit(t *testing.T) {
	a := newFakeNode(t, "a", func(fc *fakeConn, req wire.Request) {
		switch req.Op {
		case wire.OpSubscribe:
			fc.reply(wire.Response{ID: req.ID, NextOffset: req.Offset})
			pushRecords(fc, req.Sub, 0, 2, 1)
			pushRecords(fc, req.Sub, 2, 6, 1) // 6 records against a credit of 4
		case wire.OpPing, wire.OpUnsubscribe:
			fc.reply(wire.Response{ID: req.ID})
		}
	})
	b, subscribesAtB := subscribeNode(t, "b", 0, 0)
	c, err := Open(testConfig(t, a.addr, b.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := c.Subscribe(ctx, "s", 0, 0, WithCredit(4, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	recs, err := sub.Next(ctx)
	if err != nil || len(recs) != 2 {
		t.Fatalf("next: %d records, %v; want the 2 within credit", len(recs), err)
	}
	var req wire.Request
	testutil.WaitFor(t, 5*time.Second, func() error {
		atB := subscribesAtB()
		if len(atB) == 0 {
			return errors.New("the subscription did not leave the node that overran its credit")
		}
		req = atB[0]
		return nil
	})
	// The 2 records handed out by the last Next are still the caller's: 2 of 4 left.
	if req.Offset != 2 || req.Max != 2 {
		t.Fatalf("subscribe at b: offset %d, credit %d; want offset 2, credit 2", req.Offset, req.Max)
	}
}

// TestSubscriptionNextHandsOutBuffers: Next returns the records of every partition in
// ascending partition order, each partition in offset order; deliver grows a partition's
// buffer once a push, and with one partition holding records Next hands out that buffer
// without copying it.
func TestSubscriptionNextHandsOutBuffers(t *testing.T) {
	s := (&Client{}).newSubscription("s", nil)
	var atts []*attachment
	for p := range 2 {
		f := &feed{part: p}
		atts = append(atts, &attachment{sub: s, feed: f})
		s.feeds = append(s.feeds, f)
	}
	push := func(a *attachment, from, to uint64) {
		resp := wire.Response{NextOffset: to}
		for o := from; o < to; o++ {
			resp.Entries = append(resp.Entries, wire.StreamRecord{Offset: o})
		}
		a.feed.att = a
		s.deliver(a, &resp)
		a.feed.att = nil // Next grants no credit to a detached feed
	}
	ctx := context.Background()
	push(atts[1], 0, 2)
	push(atts[0], 0, 1)
	push(atts[1], 2, 3)
	recs, err := s.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ part, off int }{{0, 0}, {1, 0}, {1, 1}, {1, 2}}
	if len(recs) != len(want) {
		t.Fatalf("got %d records, want %d", len(recs), len(want))
	}
	for i, w := range want {
		if recs[i].Partition != w.part || recs[i].Offset != uint64(w.off) {
			t.Errorf("#%d: got partition %d offset %d, want %d, %d", i, recs[i].Partition, recs[i].Offset, w.part, w.off)
		}
	}

	if raceBuild {
		return // the race detector's instrumentation allocates
	}
	resp := wire.Response{NextOffset: 4, Entries: []wire.StreamRecord{{Offset: 0}, {Offset: 1}, {Offset: 2}, {Offset: 3}}}
	f, a := s.feeds[0], atts[0]
	allocs := testing.AllocsPerRun(100, func() {
		f.att, f.next, f.lentRecs = a, 0, 0
		s.deliver(a, &resp) // allocates the feed's buffer
		f.att = nil
		if recs, err := s.Next(ctx); err != nil || len(recs) != 4 {
			t.Fatalf("next: %d records, %v", len(recs), err)
		}
	})
	if allocs > 1 {
		t.Fatalf("deliver and Next of one partition: %v allocations, want 1 (the buffer, grown once)", allocs)
	}
}

// TestSubscribeBadPartitions: a partition list or start offsets that cannot be subscribed
// fail with a typed error before anything is sent to a node.
func TestSubscribeBadPartitions(t *testing.T) {
	n, subscribes := subscribeNode(t, "n", 0, 0)
	c, err := Open(testConfig(t, n.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	tests := []struct {
		parts []int
		from  map[int]uint64
		want  error
	}{
		{[]int{-1}, nil, ErrBadScope},
		{[]int{math.MaxInt32 + 1}, nil, ErrBadScope},
		{nil, nil, ErrBadArguments},
		{[]int{1, 0, 1}, nil, ErrBadArguments},
		{[]int{0}, map[int]uint64{1: 0}, ErrBadArguments},
	}
	for i, tt := range tests {
		if _, err := c.SubscribePartitions(ctx, "s", tt.parts, tt.from); !errors.Is(err, tt.want) {
			t.Errorf("#%d: got %v, want %v", i, err, tt.want)
		}
	}
	if _, err := c.Subscribe(ctx, "s", -1, 0); !errors.Is(err, ErrBadScope) {
		t.Errorf("Subscribe partition -1: got %v, want ErrBadScope", err)
	}
	if got := subscribes(); len(got) != 0 {
		t.Errorf("the node got %d subscribe requests, want none", len(got))
	}
}

// TestSubscriptionRefusesBadPush: a push out of offset order, one whose next offset goes
// back, and one over the credit window break the protocol: deliver keeps none of its
// records, detaches the feed and wakes run with errBadPush, which moves the subscription.
func TestSubscriptionRefusesBadPush(t *testing.T) {
	entries := func(offs ...uint64) []wire.StreamRecord {
		var out []wire.StreamRecord
		for _, o := range offs {
			out = append(out, wire.StreamRecord{Offset: o})
		}
		return out
	}
	tests := []wire.Response{
		{NextOffset: 13, Entries: entries(10, 12, 11)},         // out of order
		{NextOffset: 13, Entries: entries(10, 10)},             // repeated
		{NextOffset: 12, Entries: entries(9)},                  // below the feed's next offset
		{NextOffset: 11, Entries: entries(10, 11)},             // next offset before the last record
		{NextOffset: 15, Entries: entries(10, 11, 12, 13, 14)}, // over a credit of 4
	}
	for i, resp := range tests {
		s := (&Client{}).newSubscription("s", []SubscribeOption{WithCredit(4, 1<<20)})
		f := &feed{next: 10}
		a := &attachment{sub: s, feed: f, cn: &conn{}}
		f.att, s.feeds = a, []*feed{f}
		s.deliver(a, &resp)
		if len(f.buf) != 0 || f.next != 10 || f.att != nil {
			t.Errorf("#%d: kept %d records, next offset %d, attached %t; want none, 10, false", i, len(f.buf), f.next, f.att != nil)
		}
		if s.fault == nil || !errors.Is(s.fault, errBadPush) || !transient(s.fault) {
			t.Errorf("#%d: got fault %v, want a transient errBadPush", i, s.fault)
		}
		select {
		case <-s.trouble:
		default:
			t.Errorf("#%d: run not woken", i)
		}
	}
}
