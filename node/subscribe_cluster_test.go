package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/replica"
)

// servingNode returns the index of the running node that serves a subscription, or -1.
func (c *testCluster) servingNode() int {
	for i, n := range c.Nodes {
		if n != nil && len(n.Subscriptions()) > 0 {
			return i
		}
	}
	return -1
}

// dialOne returns a client of node i alone, closed when the test ends.
func (c *testCluster) dialOne(ctx context.Context, i int, maxRetries int) *client.Client {
	c.t.Helper()
	cl, err := client.Dial(ctx, client.Config{Addrs: []string{c.cfgs[i].ClientAddr}, ClusterID: "lockstep",
		MaxRetries: maxRetries, RequestTimeout: 3 * time.Second, TLS: testTLS})
	if err != nil {
		c.t.Fatalf("dial: %v", err)
	}
	c.t.Cleanup(func() { cl.Close() })
	return cl
}

// TestSubscriptionFailover: a subscription to every partition moves to another replica
// when the node serving it is killed while appends flow — twice, the first victim
// restarted in between — and delivers every appended record exactly once, in offset
// order, with the appended value (DESIGN.md §5 "Out": subscribers switch replicas without
// gap or duplicate).
func TestSubscriptionFailover(t *testing.T) {
	const parts = 4
	c := startCluster(t, clusterOptions{nodes: 3, partitions: parts})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: "events"}); err != nil {
		t.Fatal(err)
	}
	sub, err := cl.SubscribeAll(ctx, "events", map[int]uint64{}, client.WithCredit(64, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	// The writer appends until stopped, recording the value of each (partition, offset).
	type pos struct {
		part int
		off  uint64
	}
	var (
		mu       sync.Mutex
		appended = map[pos]string{}
	)
	stop := make(chan struct{})
	writerDone := make(chan error, 1)
	wcl := c.dial(ctx)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				writerDone <- nil
				return
			default:
			}
			key, val := fmt.Sprintf("k%d", i%97), fmt.Sprintf("v%d", i)
			off, err := wcl.Append(ctx, "events", []byte(key), []byte(val))
			if err != nil {
				writerDone <- fmt.Errorf("append %d: %w", i, err)
				return
			}
			mu.Lock()
			appended[pos{partition.PartitionOf([]byte(key), parts), off}] = val
			mu.Unlock()
		}
	}()

	got := map[pos]string{}
	next := make([]uint64, parts)
	receive := func(until func() bool) {
		t.Helper()
		for !until() {
			rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
			recs, err := sub.Next(rctx)
			rcancel()
			if err != nil {
				t.Fatalf("next: %v (received %d)", err, len(got))
			}
			for _, r := range recs {
				if r.Offset != next[r.Partition] {
					t.Fatalf("partition %d: got offset %d, want %d (no gap, no duplicate)", r.Partition, r.Offset, next[r.Partition])
				}
				next[r.Partition]++
				got[pos{r.Partition, r.Offset}] = string(r.Data)
			}
		}
	}
	atLeast := func(n int) func() bool { return func() bool { return len(got) >= n } }

	receive(atLeast(100))
	for round := 0; round < 2; round++ {
		victim := c.servingNode()
		if victim < 0 {
			t.Fatal("no node serves the subscription")
		}
		t.Logf("round %d: killing node %d, which serves the subscription (%d records received)", round, victim, len(got))
		c.kill(victim)
		receive(atLeast(len(got) + 300))
		testutil.WaitFor(t, 10*time.Second, func() error {
			if i := c.servingNode(); i < 0 || i == victim {
				return fmt.Errorf("subscription served by %d", i)
			}
			return nil
		})
		if round == 0 {
			c.restart(victim)
		}
	}
	close(stop)
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	want := len(appended)
	mu.Unlock()
	receive(atLeast(want))
	mu.Lock()
	defer mu.Unlock()
	for p, v := range appended {
		if got[p] != v {
			t.Errorf("partition %d offset %d: got %q, want %q", p.part, p.off, got[p], v)
		}
	}
	if len(got) != len(appended) {
		t.Errorf("received %d records, appended %d", len(got), len(appended))
	}
}

// TestSubscriptionSlowSubscriberBounded: a subscriber that stops calling Next holds the
// node to its credit window — records and bytes pushed stay within it however far the
// stream runs ahead — while another subscriber on the same connection receives every
// record; when the slow one reads again, it gets all of them, in order.
func TestSubscriptionSlowSubscriberBounded(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 1, partitions: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.dialOne(ctx, 0, -1)
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: "s"}); err != nil {
		t.Fatal(err)
	}
	const window, windowBytes = 50, 4 << 10
	slow, err := cl.Subscribe(ctx, "s", 0, 0, client.WithCredit(window, windowBytes))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fast, err := cl.Subscribe(ctx, "s", 0, 0, client.WithCredit(window, windowBytes))
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()

	const total, valueBytes = 3000, 100
	value := make([]byte, valueBytes)
	recSize := int64(valueBytes + 2 + 29) // key "kN…", value, framing (wire.StreamRecordSize)
	go func() {
		batch := make([]client.StreamRecord, 100)
		for i := 0; i < total; i += len(batch) {
			for j := range batch {
				batch[j] = client.StreamRecord{Key: []byte("k"), Value: value}
			}
			if _, err := cl.AppendBatch(ctx, "s", batch); err != nil {
				t.Errorf("append: %v", err)
				return
			}
		}
	}()
	n := 0
	for n < total {
		recs, err := fast.Next(ctx)
		if err != nil {
			t.Fatalf("fast subscriber: %v after %d records", err, n)
		}
		for _, r := range recs {
			if r.Offset != uint64(n) {
				t.Fatalf("fast subscriber: offset %d, want %d", r.Offset, n)
			}
			n++
		}
	}
	// The slow one has sent the fewest (the fast one's count may trail its last push).
	stats := c.Nodes[0].Subscriptions()
	if len(stats) != 2 {
		t.Fatalf("node holds %d subscriptions, want 2", len(stats))
	}
	slowStats := stats[0]
	if stats[1].SentRecords < slowStats.SentRecords {
		slowStats = stats[1]
	}
	t.Logf("slow subscription after %d records appended: %+v", total, slowStats)
	if slowStats.SentRecords > window || slowStats.SentBytes > windowBytes+recSize {
		t.Fatalf("slow subscription: node sent %d records, %d bytes; window %d records, %d bytes (+1 record)",
			slowStats.SentRecords, slowStats.SentBytes, window, windowBytes)
	}
	if slowStats.SentRecords == 0 {
		t.Fatal("slow subscription: node sent nothing at all")
	}
	n = 0
	for n < total {
		recs, err := slow.Next(ctx)
		if err != nil {
			t.Fatalf("slow subscriber: %v after %d records", err, n)
		}
		if len(recs) > window {
			t.Fatalf("slow subscriber: %d records at once, window %d", len(recs), window)
		}
		for _, r := range recs {
			if r.Offset != uint64(n) {
				t.Fatalf("slow subscriber: offset %d, want %d", r.Offset, n)
			}
			n++
		}
	}
	slow.Close()
	fast.Close()
	testutil.WaitFor(t, 5*time.Second, func() error {
		if s := c.Nodes[0].Subscriptions(); len(s) != 0 {
			return fmt.Errorf("node still has %d subscriptions after Close", len(s))
		}
		return nil
	})
}

// TestSubscribeBadInput: an unknown stream, a partition out of range, an offset below
// retention and one past the end are typed errors, and change nothing (DESIGN.md
// invariant 7); a connection's subscriptions are bounded.
func TestSubscribeBadInput(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 1, partitions: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.dialOne(ctx, 0, 2)
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: "r", Retention: builtin.StreamRetention{MaxRecords: 5}}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := cl.Append(ctx, "r", []byte("same-key"), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	p := partition.PartitionOf([]byte("same-key"), 2)

	if _, err := cl.Subscribe(ctx, "nope", 0, 0); !errors.Is(err, client.ErrUnknownStream) {
		t.Errorf("unknown stream: got %v, want ErrUnknownStream", err)
	}
	if _, err := cl.SubscribeAll(ctx, "nope", nil); !errors.Is(err, client.ErrUnknownStream) {
		t.Errorf("unknown stream, all partitions: got %v, want ErrUnknownStream", err)
	}
	if _, err := cl.Subscribe(ctx, "r", 2, 0); !errors.Is(err, client.ErrBadScope) {
		t.Errorf("partition 2 of 2: got %v, want ErrBadScope", err)
	}
	if _, err := cl.Subscribe(ctx, "r", -1, 0); !errors.Is(err, client.ErrBadScope) {
		t.Errorf("partition -1: got %v, want ErrBadScope", err)
	}
	if _, err := cl.SubscribeAll(ctx, "r", map[int]uint64{5: 0}); !errors.Is(err, client.ErrBadScope) {
		t.Errorf("all partitions, from for partition 5: got %v, want ErrBadScope", err)
	}
	for i, c := range []struct {
		parts []int
		from  map[int]uint64
		want  error
	}{
		{nil, nil, client.ErrBadArguments},
		{[]int{0, 0}, nil, client.ErrBadArguments},
		{[]int{0}, map[int]uint64{1: 0}, client.ErrBadArguments},
		{[]int{0, 2}, nil, client.ErrBadScope},
	} {
		if sub, err := cl.SubscribePartitions(ctx, "r", c.parts, c.from); !errors.Is(err, c.want) {
			t.Errorf("#%d SubscribePartitions(%v, %v): got %v, want %v", i, c.parts, c.from, err, c.want)
			if err == nil {
				sub.Close()
			}
		}
	}
	if _, err := cl.SubscribePartitions(ctx, "r", []int{p}, map[int]uint64{p: 3}); !errors.Is(err, client.ErrOffsetTrimmed) {
		t.Errorf("SubscribePartitions below retention: got %v, want ErrOffsetTrimmed", err)
	}
	_, err := cl.Subscribe(ctx, "r", p, 0)
	var te *client.OffsetTrimmedError
	if !errors.As(err, &te) || !errors.Is(err, client.ErrOffsetTrimmed) || te.First != 15 || te.Partition != p {
		t.Errorf("below retention: got %v, want *OffsetTrimmedError naming first offset 15", err)
	}
	start := time.Now()
	_, err = cl.Subscribe(ctx, "r", p, 21)
	var pe *client.OffsetPastEndError
	if !errors.As(err, &pe) || !errors.Is(err, client.ErrOffsetPastEnd) || pe.Next != 20 || pe.Offset != 21 {
		t.Errorf("past the end: got %v, want *OffsetPastEndError naming next offset 20", err)
	}
	t.Logf("past the end answered in %v (grace %v)", time.Since(start), pastEndGrace)
	// At the end exactly is the tail: it waits for the next record.
	tail, err := cl.Subscribe(ctx, "r", p, 20)
	if err != nil {
		t.Fatalf("subscribe at the end: %v", err)
	}
	if _, err := cl.Append(ctx, "r", []byte("same-key"), []byte("new")); err != nil {
		t.Fatal(err)
	}
	recs, err := tail.Next(ctx)
	if err != nil || len(recs) != 1 || recs[0].Offset != 20 || string(recs[0].Data) != "new" || recs[0].Partition != p {
		t.Errorf("tail: got %+v, %v; want the record at offset 20", recs, err)
	}
	tail.Close()
	if _, err := tail.Next(ctx); !errors.Is(err, client.ErrClosed) {
		t.Errorf("next after close: got %v, want ErrClosed", err)
	}
	// SubscribeAll starts a partition missing from the map at its first retained offset.
	all, err := cl.SubscribeAll(ctx, "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	recs, err = all.Next(ctx)
	if err != nil || len(recs) == 0 || recs[0].Offset != 16 {
		t.Errorf("all partitions from the first retained: got %+v, %v; want offsets from 16", recs, err)
	}
	all.Close()

	// Nothing changed but the one append.
	desc, err := cl.Streams().Describe(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if got := desc.Partitions[p]; got.NextOffset != 21 || got.FirstOffset != 16 {
		t.Errorf("partition %d after the bad subscribes: %+v, want offsets 16 to 21", p, got)
	}
}

// TestSubscriptionsPerConnBounded: one subscription more than
// Config.MaxSubscriptionsPerConn on a connection is refused with Overloaded, and a
// subscription ends on the node when its client closes.
func TestSubscriptionsPerConnBounded(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 1, partitions: 1, maxSubscriptions: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := c.dialOne(ctx, 0, 0)
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: "s"}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := cl.Subscribe(ctx, "s", 0, 0); err != nil {
			t.Fatalf("subscription %d: %v", i, err)
		}
	}
	if _, err := cl.Subscribe(ctx, "s", 0, 0); !errors.Is(err, client.ErrRetriesExhausted) || !errors.Is(err, client.ErrOverloaded) {
		t.Errorf("third subscription: got %v, want overloaded", err)
	}
	if got := len(c.Nodes[0].Subscriptions()); got != 2 {
		t.Errorf("node holds %d subscriptions, want 2", got)
	}
	cl.Close()
	testutil.WaitFor(t, 5*time.Second, func() error {
		if s := c.Nodes[0].Subscriptions(); len(s) != 0 {
			return fmt.Errorf("node still has %d subscriptions after the client closed", len(s))
		}
		return nil
	})
}

// TestSubscriptionLeavesDivergentReplica: a replica that marks itself divergent ends the
// subscriptions it serves (an end push, woken by the divergence itself, not by a timer),
// and the subscription goes on from another replica without gap or duplicate (DESIGN.md
// invariant 6: a divergent replica stops serving).
func TestSubscriptionLeavesDivergentReplica(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3, partitions: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: "d"}); err != nil {
		t.Fatal(err)
	}
	sub, err := cl.SubscribeAll(ctx, "d", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	next := map[int]uint64{}
	total := 0
	appendAndReceive := func(n int) {
		t.Helper()
		for i := range n {
			if _, err := cl.Append(ctx, "d", []byte(fmt.Sprintf("k%d", i)), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		total += n
		for got := 0; got < n; {
			recs, err := sub.Next(ctx)
			if err != nil {
				t.Fatalf("next: %v", err)
			}
			for _, r := range recs {
				if r.Offset != next[r.Partition] {
					t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
				}
				next[r.Partition]++
				got++
			}
		}
	}
	appendAndReceive(50)
	bad := c.servingNode()
	if bad < 0 {
		t.Fatal("no node serves the subscription")
	}
	c.Nodes[bad].fsm.MarkDivergent(fmt.Errorf("%w: planted by the test", replica.ErrDivergent))
	testutil.WaitFor(t, 10*time.Second, func() error {
		if s := c.Nodes[bad].Subscriptions(); len(s) != 0 {
			return fmt.Errorf("divergent node %d still serves %d subscriptions", bad, len(s))
		}
		if i := c.servingNode(); i < 0 {
			return errors.New("the subscription has not moved yet")
		}
		return nil
	})
	appendAndReceive(50)
	t.Logf("moved from node %d to node %d; %d records in order", bad, c.servingNode(), total)
}
