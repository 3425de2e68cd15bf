package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// TestClusterStreamRetention: a stream created through the log, appended to by two
// clients at once, is trimmed by its retention identically on every replica (equal
// hashes, DESIGN.md invariant 1), and its typed errors reach the clients.
func TestClusterStreamRetention(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl1, cl2 := c.dial(ctx), c.dial(ctx)
	def := builtin.StreamDefinition{Name: "clicks", Retention: builtin.StreamRetention{MaxRecords: 5}}
	if err := cl1.Streams().Create(ctx, def); err != nil {
		t.Fatal(err)
	}
	if err := cl2.Streams().Create(ctx, def); !errors.Is(err, client.ErrStreamExists) {
		t.Fatalf("second create: got %v, want ErrStreamExists", err)
	}
	if _, err := cl2.Append(ctx, "nope", []byte("k"), []byte("v")); !errors.Is(err, client.ErrUnknownStream) {
		t.Fatalf("append to a missing stream: got %v, want ErrUnknownStream", err)
	}
	const perClient = 20
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i, cl := range []*client.Client{cl1, cl2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range perClient {
				if j%5 == 4 {
					recs := []client.StreamRecord{{Key: []byte(fmt.Sprintf("u%d", j)), Value: []byte("b")}, {Key: []byte(fmt.Sprintf("v%d", j)), Value: []byte("b")}}
					if _, err := cl.AppendBatch(ctx, "clicks", recs); err != nil {
						errs <- err
						return
					}
					continue
				}
				if _, err := cl.Append(ctx, "clicks", []byte(fmt.Sprintf("c%d-%d", i, j)), []byte("x")); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c.waitConverged()
	desc, err := cl1.Streams().Describe(ctx, "clicks")
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, p := range desc.Partitions {
		total += p.NextOffset
		if p.Records > 5 || p.Records != int64(p.NextOffset-p.FirstOffset) {
			t.Errorf("partition %+v: want at most 5 live records from first to next", p)
		}
		// Every replica holds the same records and first offset.
		var want string
		for i, n := range c.Nodes {
			part := n.fsm.Engine().Partitions()[p.Partition]
			info, _ := part.StreamInfo("clicks")
			recs, _, err := part.ReadStream("clicks", info.FirstOffset, 100)
			got := fmt.Sprintf("%+v %v %v", info, err, recs)
			if i == 0 {
				want = got
			} else if got != want {
				t.Errorf("partition %d, node %d: %s, want %s", p.Partition, i, got, want)
			}
		}
		if p.FirstOffset > 0 {
			_, next, err := cl2.ReadStream(ctx, "clicks", int(p.Partition), 0, 0)
			var te *client.OffsetTrimmedError
			if !errors.As(err, &te) || !errors.Is(err, client.ErrOffsetTrimmed) || te.First != p.FirstOffset || next != p.FirstOffset {
				t.Errorf("partition %d: read at 0: %v, next %d; want OffsetTrimmed naming %d", p.Partition, err, next, p.FirstOffset)
			}
		}
	}
	if want := uint64(2 * (perClient + perClient/5)); total != want {
		t.Errorf("offsets assigned: %d, want %d", total, want)
	}
	if err := cl1.Streams().Delete(ctx, "clicks"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cl1.ReadStream(ctx, "clicks", 0, 0, 0); !errors.Is(err, client.ErrUnknownStream) {
		t.Errorf("read after delete: %v, want ErrUnknownStream", err)
	}
	if l, err := cl1.Streams().List(ctx); err != nil || len(l) != 0 {
		t.Errorf("list after delete: %v, %v", l, err)
	}
	c.waitConverged()
}
