package node

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// consumeArgs are the arguments of test.consume: the records of one batch and the
// group commit of its end.
type consumeArgs struct {
	Partition int32                   `msgpack:"p"`
	Keys      [][]byte                `msgpack:"k"`
	Offsets   []uint64                `msgpack:"o"`
	Commit    builtin.GroupCommitArgs `msgpack:"c"`
}

// processedTable counts, per (stream partition, offset), how often test.consume
// processed the record, on the partition of the record's key.
const processedTable = "processed"

// groupRegistry is the built-ins plus test.consume, a consume-process-commit procedure:
// it counts each record of the batch and commits the batch's end offset in one step.
func groupRegistry(int) *procedures.Registry {
	r := procedures.Builtins()
	procedures.MustRegister(r, "test.consume", func(tx *partition.Tx, a consumeArgs) (builtin.NoArgs, error) {
		for i, k := range a.Keys {
			view, err := tx.On(tx.PartitionOf(k))
			if err != nil {
				return builtin.NoArgs{}, err
			}
			row := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(nil, uint32(a.Partition)), a.Offsets[i])
			var n uint64
			if v, ok := view.Get(processedTable, row); ok {
				n = binary.BigEndian.Uint64(v)
			}
			if err := view.Put(processedTable, row, binary.BigEndian.AppendUint64(nil, n+1)); err != nil {
				return builtin.NoArgs{}, err
			}
		}
		return builtin.NoArgs{}, procedures.CommitGroupOffset(tx, a.Commit)
	}, procedures.MultiPartition(), procedures.Doc("test: multi-partition (keys: the records' and the group's); args consumeArgs; result NoArgs"))
	return r
}

// consumeBatch is the handler of a test consumer: test.consume over the batch, scoped
// to the records' keys and the group's key.
func consumeBatch(cl *client.Client, group string) func(context.Context, client.GroupBatch) error {
	return func(ctx context.Context, b client.GroupBatch) error {
		a := consumeArgs{Partition: int32(b.Partition), Commit: b.Commit}
		keys := [][]byte{client.GroupKey(group)}
		for _, r := range b.Records {
			a.Keys = append(a.Keys, r.Key)
			a.Offsets = append(a.Offsets, r.Offset)
			keys = append(keys, r.Key)
		}
		_, err := client.InvokeMultiAs[builtin.NoArgs](ctx, cl, "test.consume", keys, a)
		return err
	}
}

// runningConsumer is a group member consuming in its own goroutine until stop.
type runningConsumer struct {
	m    *client.GroupMember
	stop context.CancelFunc
	done chan error // Consume's result
}

// stopConsumers stops each consumer, checks that its Consume ended by the cancel, and
// closes its member.
func stopConsumers(t *testing.T, rs ...runningConsumer) {
	t.Helper()
	for _, r := range rs {
		r.stop()
		if err := <-r.done; !errors.Is(err, context.Canceled) {
			t.Errorf("consumer %s: %v", r.m.Member(), err)
		}
		r.m.Close()
	}
}

// waitGroupDrained waits until group has committed, in every partition, the next offset
// stream has now, and returns the stream's description.
func waitGroupDrained(t *testing.T, ctx context.Context, admin *client.Client, group, stream string, timeout time.Duration) builtin.StreamDescription {
	t.Helper()
	desc, err := admin.Streams().Describe(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, timeout, func() error {
		offs, err := admin.Groups().Offsets(ctx, group)
		if err != nil {
			return err
		}
		for _, p := range desc.Partitions {
			if offs[int(p.Partition)] != p.NextOffset {
				return fmt.Errorf("partition %d: committed %d of %d", p.Partition, offs[int(p.Partition)], p.NextOffset)
			}
		}
		return nil
	})
	return desc
}

// processedCounts sums node n's processedTable over its partitions: how often test.consume
// processed each record.
func processedCounts(n *Node) map[string]uint64 {
	counts := map[string]uint64{}
	for _, part := range n.fsm.Engine().Partitions() {
		part.Scan(processedTable, partition.ScanOptions{}, func(k, v []byte) bool {
			counts[string(k)] += binary.BigEndian.Uint64(v)
			return true
		})
	}
	return counts
}

// TestClusterConsumerGroup: on 3 nodes under a steady stream of appends, members join,
// leave, and stop heartbeating (a zombie that goes on consuming); every partition is
// assigned to exactly one member in every generation observed, every record is processed
// exactly once (consume-process-commit in one procedure step), the zombie's commits are
// refused with typed errors that change nothing, and the replicas agree (DESIGN.md
// section 5 "Out", invariants 1, 2 and 7).
func TestClusterConsumerGroup(t *testing.T) {
	const (
		group  = "workers"
		stream = "events"
		parts  = 4
	)
	c := startCluster(t, clusterOptions{nodes: 3, partitions: parts, registry: groupRegistry})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin := c.dial(ctx)
	if err := admin.Streams().Create(ctx, builtin.StreamDefinition{Name: stream}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.JoinGroup(ctx, group, "nope", "x"); !errors.Is(err, client.ErrUnknownStream) {
		t.Fatalf("join on a missing stream: got %v, want ErrUnknownStream", err)
	}
	if _, err := admin.Groups().Describe(ctx, "nogroup"); !errors.Is(err, client.ErrUnknownGroup) {
		t.Fatalf("describe a missing group: got %v, want ErrUnknownGroup", err)
	}

	// Load: a producer appends batches until told to stop.
	var produced atomic.Int64
	stopProducer := make(chan struct{})
	producerDone := make(chan error, 1)
	go func() {
		cl := c.dial(ctx)
		for i := 0; ; i++ {
			select {
			case <-stopProducer:
				producerDone <- nil
				return
			default:
			}
			recs := make([]client.StreamRecord, 10)
			for j := range recs {
				recs[j] = client.StreamRecord{Key: []byte(fmt.Sprintf("k%d-%d", i, j)), Value: []byte("v")}
			}
			if _, err := cl.AppendBatch(ctx, stream, recs); err != nil {
				producerDone <- err
				return
			}
			produced.Add(int64(len(recs)))
			time.Sleep(5 * time.Millisecond) // pace the load: this is not a throughput test
		}
	}()

	// Every assignment a member observed, by generation: partition → member.
	var mu sync.Mutex
	owners := map[uint64]map[int]string{}
	var conflicts []string
	observe := func(m *client.GroupMember) {
		gen, ps := m.Current()
		mu.Lock()
		defer mu.Unlock()
		if owners[gen] == nil {
			owners[gen] = map[int]string{}
		}
		for _, p := range ps {
			if o, ok := owners[gen][p]; ok && o != m.Member() {
				conflicts = append(conflicts, fmt.Sprintf("generation %d partition %d: %s and %s", gen, p, o, m.Member()))
			}
			owners[gen][p] = m.Member()
		}
	}
	start := func(id string) runningConsumer {
		cl := c.dial(ctx)
		m, err := cl.JoinGroup(ctx, group, stream, id, client.WithSessionTimeout(time.Second), client.WithHeartbeatInterval(150*time.Millisecond))
		if err != nil {
			t.Fatalf("join %s: %v", id, err)
		}
		cctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		handle := consumeBatch(cl, group)
		go func() {
			done <- m.Consume(cctx, func(ctx context.Context, b client.GroupBatch) error {
				observe(m)
				return handle(ctx, b)
			}, client.ConsumeOptions{MaxRecords: 50})
		}()
		return runningConsumer{m, stop, done}
	}
	a, b := start("a"), start("b")
	time.Sleep(400 * time.Millisecond) // let them consume under load in generation 2
	z := start("z")
	time.Sleep(400 * time.Millisecond)
	d := start("d")
	time.Sleep(400 * time.Millisecond)
	if err := b.m.Leave(ctx); err != nil {
		t.Fatalf("b leaves: %v", err)
	}
	b.stop()
	if err := <-b.done; !errors.Is(err, context.Canceled) && !errors.Is(err, client.ErrClosed) {
		t.Fatalf("b's consumer: %v", err)
	}
	// z stops heartbeating (its consumer stops with it): a zombie once its session expires.
	zGen, zParts := z.m.Current()
	z.m.Close()
	testutil.WaitFor(t, 10*time.Second, func() error {
		desc, err := admin.Groups().Describe(ctx, group)
		if err != nil {
			return err
		}
		for _, m := range desc.Members {
			if m.Member == "z" {
				return fmt.Errorf("z still in generation %d", desc.Generation)
			}
		}
		return nil
	})
	if err := <-z.done; !errors.Is(err, client.ErrClosed) {
		t.Errorf("the zombie's consumer ended with %v, want ErrClosed (its member was closed)", err)
	}
	// The zombie's commit of its old assignment is refused and changes nothing.
	before, err := admin.Groups().Offsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if len(zParts) > 0 {
		zc := c.dial(ctx)
		err := consumeBatch(zc, group)(ctx, client.GroupBatch{Partition: zParts[0],
			Records: []client.Record{{Key: []byte("zombie"), Offset: 1 << 40}},
			Commit:  z.m.CommitArgs(zGen, zParts[0], 1<<40)})
		if !errors.Is(err, client.ErrNotGroupMember) {
			t.Errorf("zombie consume-process-commit: got %v, want ErrNotGroupMember", err)
		}
	}
	if err := z.m.Commit(ctx, 0, 1<<40); !errors.Is(err, client.ErrNotGroupMember) {
		t.Errorf("zombie commit: got %v, want ErrNotGroupMember", err)
	}
	// a's commit with a generation it held before is refused too.
	if _, err := client.InvokeAs[builtin.NoArgs](ctx, admin, builtin.GroupCommit, client.GroupKey(group),
		a.m.CommitArgs(1, 0, 1<<40)); !errors.Is(err, client.ErrStaleGeneration) {
		t.Errorf("commit with generation 1: got %v, want ErrStaleGeneration", err)
	}
	if desc, err := admin.Groups().Describe(ctx, group); err == nil {
		for _, m := range desc.Members {
			if m.Member == "a" && len(m.Partitions) < parts {
				other := (m.Partitions[0] + 1) % parts
				if err := a.m.Commit(ctx, int(other), 1<<40); !errors.Is(err, client.ErrNotAssigned) && !errors.Is(err, client.ErrStaleGeneration) {
					t.Errorf("commit of d's partition: got %v, want ErrNotAssigned", err)
				}
			}
		}
	}
	after, err := admin.Groups().Offsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	for p, off := range after {
		if off >= 1<<40 || off < before[p] {
			t.Errorf("partition %d: offset %d after the refused commits, %d before", p, off, before[p])
		}
	}

	// Stop the load; a and d drain the stream.
	time.Sleep(300 * time.Millisecond)
	close(stopProducer)
	if err := <-producerDone; err != nil {
		t.Fatalf("producer: %v", err)
	}
	desc := waitGroupDrained(t, ctx, admin, group, stream, 30*time.Second)
	stopConsumers(t, a, d)
	hashes := c.waitConverged()
	t.Logf("%d records, generations observed %d, hashes %x", produced.Load(), len(owners), hashes)

	mu.Lock()
	for _, s := range conflicts {
		t.Errorf("two owners: %s", s)
	}
	mu.Unlock()
	// Every record processed exactly once, on every replica alike.
	var total uint64
	for _, p := range desc.Partitions {
		total += p.NextOffset
	}
	if total != uint64(produced.Load()) {
		t.Fatalf("stream holds %d records, %d appended", total, produced.Load())
	}
	for _, n := range c.Nodes {
		counts := processedCounts(n)
		for _, p := range desc.Partitions {
			for off := uint64(0); off < p.NextOffset; off++ {
				row := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(nil, uint32(p.Partition)), off)
				if got := counts[string(row)]; got != 1 {
					t.Fatalf("node %s: partition %d offset %d processed %d times, want 1", n.cfg.ID, p.Partition, off, got)
				}
				delete(counts, string(row))
			}
		}
		if len(counts) != 0 {
			t.Fatalf("node %s: %d processed rows for records that do not exist", n.cfg.ID, len(counts))
		}
	}
	if len(owners) < 3 {
		t.Errorf("observed %d generations, want at least 3: the test did not rebalance under load", len(owners))
	}
}

// TestClusterGroupMemberExpires: a member whose heartbeats come later than its session
// timeout learns from its own next heartbeat that it is out (Err, Changed) and stops; its
// refused heartbeat changes nothing (it is still listed, same generation), and the next
// member's join removes it and joins in one new generation.
func TestClusterGroupMemberExpires(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: "s"}); err != nil {
		t.Fatal(err)
	}
	m, err := cl.JoinGroup(ctx, "g", "s", "slow", client.WithSessionTimeout(200*time.Millisecond), client.WithHeartbeatInterval(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	changed := m.Changed()
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("the member never learned it was out")
	}
	if err := m.Err(); !errors.Is(err, client.ErrNotGroupMember) {
		t.Fatalf("Err: got %v, want ErrNotGroupMember", err)
	}
	d, err := cl.Groups().Describe(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if d.Generation != 1 || len(d.Members) != 1 {
		t.Errorf("after the refused heartbeat: got %+v, want generation 1 with the member still listed", d)
	}
	y, err := cl.JoinGroup(ctx, "g", "s", "y")
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	if gen, parts := y.Current(); gen != 2 || len(parts) != 4 {
		t.Errorf("join after the expiry: generation %d partitions %v, want 2 and all 4", gen, parts)
	}
}

// TestClusterGroupConsumePushed: GroupMember.Consume reads by push subscription, one
// per owned partition on the node, and subscribes again at each assignment change: a
// lone member holds subscriptions to all 4 partitions; after a second member joins each
// holds its 2; within a generation each partition's batches follow one another without
// gap or overlap; every record is processed once; a committed offset below retention
// goes on from the first retained record (DESIGN.md section 5 "Out").
func TestClusterGroupConsumePushed(t *testing.T) {
	const (
		group  = "pushed"
		stream = "events"
		parts  = 4
	)
	c := startCluster(t, clusterOptions{nodes: 1, partitions: parts, registry: groupRegistry})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := c.dial(ctx)
	if err := admin.Streams().Create(ctx, builtin.StreamDefinition{Name: stream}); err != nil {
		t.Fatal(err)
	}
	appendN := func(from, n int) {
		t.Helper()
		recs := make([]client.StreamRecord, n)
		for i := range recs {
			recs[i] = client.StreamRecord{Key: fmt.Appendf(nil, "k%d", from+i), Value: []byte("v")}
		}
		if _, err := admin.AppendBatch(ctx, stream, recs); err != nil {
			t.Fatal(err)
		}
	}
	// The successful batches by (member, generation, partition): each must start where
	// the one before ended.
	type span struct{ first, next uint64 }
	var mu sync.Mutex
	spans := map[string][]span{}
	var errs []string
	start := func(id string) runningConsumer {
		cl := c.dial(ctx)
		m, err := cl.JoinGroup(ctx, group, stream, id, client.WithSessionTimeout(5*time.Second), client.WithHeartbeatInterval(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		cctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		handle := consumeBatch(cl, group)
		go func() {
			done <- m.Consume(cctx, func(ctx context.Context, b client.GroupBatch) error {
				for i, r := range b.Records {
					if r.Partition != b.Partition || i > 0 && r.Offset <= b.Records[i-1].Offset {
						mu.Lock()
						errs = append(errs, fmt.Sprintf("batch of partition %d holds %d@%d out of order", b.Partition, r.Partition, r.Offset))
						mu.Unlock()
					}
				}
				if err := handle(ctx, b); err != nil {
					return err
				}
				key := fmt.Sprintf("%s/g%d/p%d", id, b.Generation, b.Partition)
				mu.Lock()
				spans[key] = append(spans[key], span{b.Records[0].Offset, b.Next})
				mu.Unlock()
				return nil
			}, client.ConsumeOptions{MaxRecords: 20})
		}()
		return runningConsumer{m, stop, done}
	}
	drained := func() {
		t.Helper()
		waitGroupDrained(t, ctx, admin, group, stream, 20*time.Second)
	}
	// subscribed waits until the node serves want subscriptions to the stream, one per
	// partition in total.
	subscribed := func(want int) {
		t.Helper()
		testutil.WaitFor(t, 10*time.Second, func() error {
			seen := map[int]int{}
			for _, s := range c.Nodes[0].Subscriptions() {
				if s.Stream == stream {
					seen[s.Partition]++
				}
			}
			if len(seen) != want {
				return fmt.Errorf("subscriptions by partition %v, want one to each of %d", seen, want)
			}
			for p, n := range seen {
				if n != 1 {
					return fmt.Errorf("partition %d has %d subscriptions", p, n)
				}
			}
			return nil
		})
	}

	a := start("a")
	appendN(0, 200)
	drained()
	subscribed(parts)
	b := start("b")
	testutil.WaitFor(t, 10*time.Second, func() error {
		if ga, pa := a.m.Current(); len(pa) != 2 || ga != b.m.Generation() {
			return fmt.Errorf("a holds %v in generation %d, b is in %d", pa, ga, b.m.Generation())
		}
		return nil
	})
	appendN(200, 200)
	drained()
	subscribed(parts) // a dropped two of its four, b took them
	stopConsumers(t, a, b)

	mu.Lock()
	defer mu.Unlock()
	for _, e := range errs {
		t.Error(e)
	}
	for key, ss := range spans {
		for i := 1; i < len(ss); i++ {
			if ss[i].first != ss[i-1].next {
				t.Errorf("%s: batch %d starts at %d, the one before ended at %d", key, i, ss[i].first, ss[i-1].next)
			}
		}
	}
	counts := processedCounts(c.Nodes[0])
	total := 0
	for k, n := range counts {
		if n != 1 {
			t.Errorf("record %x processed %d times", k, n)
		}
		total++
	}
	if total != 400 {
		t.Errorf("%d records processed, want 400", total)
	}
}

// TestClusterGroupConsumeTrimmed: a committed offset that retention has trimmed is
// consumed from the first retained record on.
func TestClusterGroupConsumeTrimmed(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 1, partitions: 2, registry: groupRegistry})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: "r", Retention: builtin.StreamRetention{MaxRecords: 5}}); err != nil {
		t.Fatal(err)
	}
	p := partition.PartitionOf([]byte("same-key"), 2)
	for i := range 20 {
		if _, err := cl.Append(ctx, "r", []byte("same-key"), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := cl.JoinGroup(ctx, "g", "r", "a")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Commit(ctx, p, 2); err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	got := make(chan client.GroupBatch, 1)
	done := make(chan error, 1)
	go func() {
		done <- m.Consume(cctx, func(ctx context.Context, b client.GroupBatch) error {
			select {
			case got <- b:
			default:
			}
			return nil
		}, client.ConsumeOptions{})
	}()
	select {
	case b := <-got:
		if b.Partition != p || b.Records[0].Offset != 15 || b.Next != 20 {
			t.Errorf("first batch: partition %d offsets %d to %d, want partition %d 15 to 20", b.Partition, b.Records[0].Offset, b.Next, p)
		}
	case err := <-done:
		t.Fatalf("Consume ended: %v", err)
	case <-ctx.Done():
		t.Fatal("no batch")
	}
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Consume: %v", err)
	}
}
