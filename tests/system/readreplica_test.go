package system

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/jepsen"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// A read replica cut off from the cluster by a network fault (issue 13's read-replica
// scenario), with real processes: every Raft link between it and the voters goes through
// a jepsen.Net proxy, which the test cuts and heals.

const (
	// rrStream is the stream the writer appends to; rrPartitions its partition count.
	rrStream     = "history"
	rrPartitions = 4
)

// streamHistory reads every record of rrStream through cl, per partition, in offset
// order.
func streamHistory(ctx context.Context, cl *client.Client) ([][]string, error) {
	out := make([][]string, rrPartitions)
	for p := range rrPartitions {
		for off := uint64(0); ; {
			recs, next, err := cl.ReadStream(ctx, rrStream, p, off, 0)
			if err != nil {
				return nil, fmt.Errorf("partition %d offset %d: %w", p, off, err)
			}
			if len(recs) == 0 {
				break
			}
			for _, r := range recs {
				if r.Offset != uint64(len(out[p])) {
					return nil, fmt.Errorf("partition %d: record at offset %d after %d records", p, r.Offset, len(out[p]))
				}
				out[p] = append(out[p], string(r.Data))
			}
			off = next
		}
	}
	return out, nil
}

// prefixOf returns nil if every partition of h is a prefix of the same partition of
// full, else the first difference.
func prefixOf(h, full [][]string) error {
	for p := range h {
		if len(h[p]) > len(full[p]) {
			return fmt.Errorf("partition %d: %d records, the leader has %d", p, len(h[p]), len(full[p]))
		}
		for i := range h[p] {
			if h[p][i] != full[p][i] {
				return fmt.Errorf("partition %d offset %d: %q, the leader has %q", p, i, h[p][i], full[p][i])
			}
		}
	}
	return nil
}

func historyLen(h [][]string) int {
	n := 0
	for _, p := range h {
		n += len(p)
	}
	return n
}

// onlyTo returns a client.Config.Dial that connects to addr alone, so that every answer
// comes from that node (a client follows leader hints and spreads reads otherwise).
func onlyTo(addr string) func(ctx context.Context, a string) (net.Conn, error) {
	return func(ctx context.Context, a string) (net.Conn, error) {
		if a != addr {
			return nil, fmt.Errorf("this test's client talks to %s only, not %s", addr, a)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", a)
	}
}

// TestReadReplicaPartition: a read replica whose Raft links to the voters are cut while
// a writer appends to a stream and adds to a counter lags — it serves reads at
// consistency Any and stream reads from the state it had — and every answer it gives is
// a prefix of the leader's history (stream records offset by offset; a counter never
// above the leader's, never going back). After the links heal it catches up: its
// records, applied index and state hashes equal the voters'.
func TestReadReplicaPartition(t *testing.T) {
	bin := proctest.BuildBinary(t)
	var (
		addrs, peers, seeds []string
		nt                  *jepsen.ProxyNet
		voters              []*proctest.Node
	)
	start := func(i int, id string, extra ...string) *proctest.Node {
		args := append([]string{"--id", id, "--data", filepath.Join(t.TempDir(), id), "--raft", addrs[3*i],
			"--client", addrs[3*i+1], "--admin", addrs[3*i+2], "--partitions", fmt.Sprint(rrPartitions),
			"--log-level", "warn"}, extra...)
		n := proctest.SpawnNodeEnv(t, bin, id, nt.NodeEnv(i), args...)
		n.Raft, n.Client, n.Admin = addrs[3*i], addrs[3*i+1], addrs[3*i+2]
		return n
	}
	// The voters, started again on new ports if one was taken between choosing and binding.
	for attempt := 1; ; attempt++ {
		addrs, peers, seeds, voters = testutil.FreeAddrs(t, 12), nil, nil, nil
		var raftAddrs []string
		for i := range 4 {
			raftAddrs = append(raftAddrs, addrs[3*i])
		}
		var err error
		if nt, err = jepsen.NewProxyNet(raftAddrs, nil, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nt.Close() })
		for i := range 3 {
			peers = append(peers, fmt.Sprintf("n%d=%s=%s", i+1, addrs[3*i], addrs[3*i+1]))
			seeds = append(seeds, addrs[3*i+1])
		}
		for i := range 3 {
			voters = append(voters, start(i, fmt.Sprintf("n%d", i+1), "--bootstrap", strings.Join(peers, ",")))
		}
		for _, n := range voters {
			if err = n.WaitReady(n.Admin, proctest.ReadyTimeout); err != nil {
				err = fmt.Errorf("%s: %w", n.ID, err)
				break
			}
		}
		if err == nil {
			break
		}
		for _, n := range voters {
			n.Kill()
		}
		nt.Close()
		if attempt == 3 || !errors.Is(err, jepsen.ErrPortTaken) {
			t.Fatal(err)
		}
		t.Logf("starting the voters again: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, client.Config{Addrs: seeds, MaxRetries: -1, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: rrStream}); err != nil {
		t.Fatal(err)
	}
	replica := start(3, "r1", "--join", strings.Join(seeds, ","), "--read-replica")
	if err := replica.WaitReady(replica.Admin, proctest.ReadyTimeout); err != nil {
		t.Fatal(err)
	}
	rcl, err := client.Open(client.Config{Addrs: []string{replica.Client}, TLS: proctest.TLS(), Dial: onlyTo(replica.Client),
		MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rcl.Close()

	// The leader's history is read from the leader alone: it has applied at least what any
	// replica has.
	cs, err := cl.Cluster().Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var leaderAddr string
	for _, n := range cs.Nodes {
		if n.ID == cs.Leader {
			leaderAddr = n.Addr
		}
	}
	lcl, err := client.Open(client.Config{Addrs: []string{leaderAddr}, TLS: proctest.TLS(), Dial: onlyTo(leaderAddr), MaxRetries: 2})
	if err != nil {
		t.Fatalf("leader %q at %q: %v", cs.Leader, leaderAddr, err)
	}
	defer lcl.Close()

	// One writer appends w0, w1, ... (keys spread over the partitions) and adds 1 to a
	// counter per append, each acknowledged before the next.
	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		written atomic.Int64
		werrMu  sync.Mutex
		werr    error
	)
	writerErr := func() error {
		werrMu.Lock()
		defer werrMu.Unlock()
		return werr
	}
	wg.Go(func() {
		for i := 0; !stop.Load(); i++ {
			_, err := cl.Append(ctx, rrStream, fmt.Appendf(nil, "k%d", i%16), []byte(fmt.Sprintf("w%d", i)))
			if err == nil {
				_, err = cl.CounterAdd(ctx, "appends", 1)
			}
			if err != nil {
				werrMu.Lock()
				werr = err
				werrMu.Unlock()
				return
			}
			written.Add(1)
		}
	})
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
	waitWritten := func(n int64) {
		t.Helper()
		from := written.Load()
		testutil.WaitFor(t, 60*time.Second, func() error {
			if err := writerErr(); err != nil {
				t.Fatalf("writer: %v", err)
			}
			if got := written.Load() - from; got < n {
				return fmt.Errorf("%d of %d more appends", got, n)
			}
			return nil
		})
	}
	// reads checks one round of the replica's answers against the leader's history,
	// returns how many records the replica had, and the counter it gave.
	lastCount := int64(-1)
	reads := func() (int, int64) {
		t.Helper()
		count, err := client.QueryAs[int64](ctx, rcl, builtin.CounterGet, []byte("appends"), builtin.NoArgs{}, client.ReadAny)
		if err != nil {
			t.Fatalf("replica: counter at consistency Any: %v", err)
		}
		got, err := streamHistory(ctx, rcl)
		if err != nil {
			t.Fatalf("replica: stream read: %v", err)
		}
		leader, err := streamHistory(ctx, lcl)
		if err != nil {
			t.Fatalf("leader: stream read: %v", err)
		}
		if err := prefixOf(got, leader); err != nil {
			t.Fatalf("the read replica served a history that is not the leader's: %v", err)
		}
		if count < lastCount {
			t.Fatalf("the replica's counter went back from %d to %d", lastCount, count)
		}
		if n := int64(historyLen(leader)); count > n {
			t.Fatalf("the replica's counter %d is above the leader's %d appends", count, n)
		}
		lastCount = count
		return historyLen(got), count
	}
	waitWritten(50)
	reads()

	// Cut every Raft link between the replica and the voters, both ways.
	if err := nt.Cut([2]int{0, 3}, [2]int{1, 3}, [2]int{2, 3}, [2]int{3, 0}, [2]int{3, 1}, [2]int{3, 2}); err != nil { // the replica (3) from the voters, both ways
		t.Fatal(err)
	}
	waitWritten(20) // whatever was in flight to the replica lands or is lost
	cutAt, cutCount := reads()
	// The proxies forward nothing more to the replica: the last message it received from
	// the leader came before settled (the one chunk per connection a proxy may have been
	// writing as the cut fell has landed while 20 appends committed and the replica
	// answered a round of reads).
	settled := time.Now()
	for range 5 {
		waitWritten(30)
		n, count := reads()
		if n != cutAt || count != cutCount {
			t.Fatalf("the replica, cut off, moved from %d records (counter %d) to %d (%d)", cutAt, cutCount, n, count)
		}
	}
	// The readiness rule's bound: a node that has not heard from the leader for the leader
	// lease reports not ready (docs/operations.md, "Readiness"). The test lets the bound
	// pass, then asks once: waiting for the stated time is the claim under test, not a
	// retry, and however slow the machine the answer must be "not ready".
	<-time.After(time.Until(settled.Add(node.DefaultLeaderLease)))
	if st, err := rcl.Status(ctx, replica.Client); err != nil {
		t.Fatal(err)
	} else if st.Ready {
		t.Errorf("the replica, cut off, reports ready %v after its last message from the leader (the bound is %v)",
			time.Since(settled).Round(time.Millisecond), node.DefaultLeaderLease)
	} else if !strings.Contains(st.NotReadyReason, node.ErrNoLeader.Error()) {
		t.Errorf("the replica, cut off, is not ready for another reason: %s", st.NotReadyReason)
	} else {
		t.Logf("cut off replica, %v after its last message: %s", time.Since(settled).Round(time.Millisecond), st.NotReadyReason)
	}
	if lag := written.Load() - cutCount; lag < 150 {
		t.Fatalf("the replica lags by %d appends only", lag)
	}

	// Heal: the replica catches up.
	if err := nt.Heal(); err != nil {
		t.Fatal(err)
	}
	waitWritten(50)
	stop.Store(true)
	wg.Wait()
	if err := writerErr(); err != nil {
		t.Fatalf("writer: %v", err)
	}
	all := strings.Join(append(slices.Clone(seeds), replica.Client), ",")
	testutil.WaitFor(t, 60*time.Second, func() error {
		cs := statusAnyHealth(t, bin, all)
		if len(cs.Nodes) != 4 {
			return fmt.Errorf("%d nodes answer", len(cs.Nodes))
		}
		for _, n := range cs.Nodes {
			if n.Error != "" || !n.Ready {
				return fmt.Errorf("%s: ready %t %s %s", n.NodeID, n.Ready, n.NotReadyReason, n.Error)
			}
			if n.AppliedIndex != cs.Nodes[0].AppliedIndex || !slices.Equal(n.Hashes, cs.Nodes[0].Hashes) {
				return fmt.Errorf("%s at %d, %s at %d: not converged", n.NodeID, n.AppliedIndex, cs.Nodes[0].NodeID, cs.Nodes[0].AppliedIndex)
			}
		}
		return nil
	})
	got, err := streamHistory(ctx, rcl)
	if err != nil {
		t.Fatal(err)
	}
	leader, err := streamHistory(ctx, lcl)
	if err != nil {
		t.Fatal(err)
	}
	if err := prefixOf(leader, got); err != nil || historyLen(got) != historyLen(leader) {
		t.Fatalf("after healing, the replica holds %d records, the leader %d: %v", historyLen(got), historyLen(leader), err)
	}
	if count, err := client.QueryAs[int64](ctx, rcl, builtin.CounterGet, []byte("appends"), builtin.NoArgs{}, client.ReadAny); err != nil || count != written.Load() {
		t.Fatalf("after healing, the replica's counter is %d (%v), want %d", count, err, written.Load())
	}
	if bytes.Contains(replica.Log(), []byte("divergent")) {
		t.Fatalf("replica log mentions divergence:\n%s", replica.Log())
	}
	t.Logf("replica cut off at %d records; the cluster went on to %d", cutAt, historyLen(leader))
}
