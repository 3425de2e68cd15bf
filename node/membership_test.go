package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/certs"
	"github.com/lockstepdb/lockstep/internal/testutil"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/internal/wire"
)

func (c *testCluster) voters() []string {
	c.t.Helper()
	servers, err := c.leader().seq.Servers()
	if err != nil {
		c.t.Fatal(err)
	}
	var ids []string
	for _, s := range servers {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return ids
}

// TestJoinAndRemove: a new node joins a running cluster, receives the log, and ends with
// the same state; a removed voter leaves the configuration (DESIGN.md section 6).
func TestJoinAndRemove(t *testing.T) {
	bothSnapshotModes(t, func(t *testing.T, snapshots bool) {
		c := startCluster(t, clusterOptions{nodes: 3, snapshots: snapshots})
		cl := c.dial(context.Background())
		for i := 0; i < 100; i++ {
			putKV(t, cl, fmt.Sprintf("k%d", i), "v")
		}
		i, err := c.AddNode(nil)
		if err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, 30*time.Second, func() error {
			if v := c.voters(); len(v) != 4 {
				return fmt.Errorf("voters %v", v)
			}
			return nil
		})
		putKV(t, cl, "after-join", "v")
		c.waitConverged()
		if got := c.Nodes[i].Status(); got.Divergent != "" || got.AppliedIndex == 0 {
			t.Fatalf("joined node status %+v", got)
		}
		// Remove a follower through the admin request.
		victim := ""
		for _, n := range c.Nodes {
			if n != c.leader() {
				victim = n.ID()
				break
			}
		}
		// Through the client, which follows the leader: under load leadership can move
		// between the choice of the victim and the call.
		if err := cl.Cluster().RemoveMember(context.Background(), victim); err != nil {
			t.Fatalf("remove %s: %v", victim, err)
		}
		if v := c.voters(); len(v) != 3 || slices.Contains(v, victim) {
			t.Fatalf("voters after removing %s: %v", victim, v)
		}
		putKV(t, cl, "after-remove", "v")
	})
}

// TestJoinRefusedForDifferentProcedures: a node whose procedure set or partition count
// differs from the cluster's is not added (DESIGN.md section 4). At cluster version 1 the
// procedure set must be identical; from version 2 on a joining node must carry the active
// registrations instead (TestRollingUpgrade).
func TestJoinRefusedForDifferentProcedures(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3, configure: func(i int, cfg *Config) { cfg.Replica.MaxClusterVersion = 1 }})
	cases := []wire.JoinArgs{
		{ID: "n9", RaftAddr: "127.0.0.1:1", ClientAddr: "127.0.0.1:2", Partitions: 4, Procedures: nondetRegistry(0).Fingerprint()},
		{ID: "n9", RaftAddr: "127.0.0.1:1", ClientAddr: "127.0.0.1:2", Partitions: 8, Procedures: c.leader().fsm.Fingerprint()},
	}
	for i, j := range cases {
		args, err := msgpack.Marshal(&j)
		if err != nil {
			t.Fatal(err)
		}
		resp := rawCall(t, c.leader().ClientAddr(), &wire.Request{Op: wire.OpJoin, Args: args})
		if resp.Code != wire.CodeBadArguments {
			t.Errorf("#%d: got %v, want CodeBadArguments", i, resp.Err())
		}
		// The refusal names what differs and what to do (issue 20 item 10).
		if want := []string{"procedure set", "--partitions 4"}[i]; !strings.Contains(resp.Message, want) {
			t.Errorf("#%d: %q does not say %q", i, resp.Message, want)
		}
	}
	if v := c.voters(); len(v) != 3 {
		t.Fatalf("voters %v, want the original 3", v)
	}
}

// TestJoinRefusedForDifferentBuild: a node built for another target than the leader (Go
// version, GOARCH, GOAMD64) could compute different float state from the same log, so its
// join is refused with a message naming both targets, and nothing changes (DESIGN.md
// section 10: what must be identical is checked at join; issue 20, item 6). The joining
// node's build is injected (Config.BuildTarget): no arm64 build is needed.
func TestJoinRefusedForDifferentBuild(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3})
	leader := c.leader()
	fp := leader.fsm.Fingerprint()
	const arm = "go1.26.8 arm64 GOARM64=v8.0"
	cases := []struct {
		build string
		want  []string
	}{
		{arm, []string{"build target differs", `"` + arm + `"`, `"` + BuildTarget() + `"`}},
		{"", []string{"does not report its build target", `"` + BuildTarget() + `"`}},
	}
	for i, tt := range cases {
		args, err := msgpack.Marshal(&wire.JoinArgs{ID: "n9", RaftAddr: "127.0.0.1:1", ClientAddr: "127.0.0.1:2",
			Partitions: 4, Procedures: fp, Build: tt.build})
		if err != nil {
			t.Fatal(err)
		}
		resp := rawCall(t, c.leader().ClientAddr(), &wire.Request{Op: wire.OpJoin, Args: args})
		if resp.Code != wire.CodeBadArguments {
			t.Errorf("#%d: got %v, want CodeBadArguments", i, resp.Err())
		}
		for _, w := range tt.want {
			if !strings.Contains(resp.Message, w) {
				t.Errorf("#%d: refusal %q does not say %s", i, resp.Message, w)
			}
		}
	}
	// A real node whose build differs asks to join through its join loop: refused, it
	// stays not ready, saying why.
	cfg := c.cfgs[0]
	cfg.ID, cfg.DataDir, cfg.AdminAddr, cfg.BuildTarget = "n9", t.TempDir(), "", arm
	cfg.RaftAddr, cfg.ClientAddr, cfg.Bootstrap = "127.0.0.1:0", "127.0.0.1:0", nil
	cfg.Join = []string{c.cfgs[0].ClientAddr, c.cfgs[1].ClientAddr, c.cfgs[2].ClientAddr}
	n, err := Start(cfg, c.reg(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	testutil.WaitFor(t, 30*time.Second, func() error {
		err := n.Ready()
		if err == nil {
			return errors.New("the node of another build is ready")
		}
		if msg := err.Error(); !strings.Contains(msg, "build target differs") || !strings.Contains(msg, arm) ||
			!strings.Contains(msg, BuildTarget()) {
			return fmt.Errorf("not ready, but not refused for its build: %v", err)
		}
		return nil
	})
	if v := c.voters(); len(v) != 3 {
		t.Fatalf("voters %v, want the original 3", v)
	}
	if members, _ := leader.seq.Members(); len(members) != 3 {
		t.Fatalf("members after the refused join: %+v", members)
	}
}

// holdingSeed is a join seed that holds the first join request it gets: the test adds the
// node to the Raft configuration itself (the first half of a join), then lets the seed
// forward the request to the leader and pass its answer back.
type holdingSeed struct {
	addr     string
	requests chan wire.Request // the held request
	forward  chan string       // the address to forward it to
	stop     func()            // closes the seed and waits for it; idempotent
}

func startHoldingSeed(t *testing.T) *holdingSeed {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	st, err := certs.NewNodeStore(testCertsDir) // the seed poses as a node of the cluster
	if err != nil {
		t.Fatal(err)
	}
	ln = tls.NewListener(ln, st.ServerConfig(certs.KindNode, certs.KindClient))
	ctx, cancel := context.WithCancel(context.Background())
	s := &holdingSeed{addr: ln.Addr().String(), requests: make(chan wire.Request, 1), forward: make(chan string, 1)}
	var wg sync.WaitGroup
	s.stop = sync.OnceFunc(func() {
		cancel()
		ln.Close()
		wg.Wait()
	})
	t.Cleanup(s.stop)
	wg.Go(func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		if _, err := wire.ServerHandshake(ctx, nc, "", "seed"); err != nil {
			return
		}
		c, err := wire.NewConn(nc, wire.ConnConfig{})
		if err != nil {
			return
		}
		defer c.Close()
		var req wire.Request
		if err := c.RecvRequest(&req); err != nil {
			return
		}
		s.requests <- req
		var to string
		select {
		case to = <-s.forward:
		case <-ctx.Done():
			return
		}
		resp, err := roundTrip(ctx, to, "", &req)
		if err != nil {
			resp = wire.ErrorResponse(req.ID, err)
		}
		if c.SendResponse(ctx, &resp) == nil {
			c.Shutdown(ctx) // deliver the answer before closing
		}
	})
	return s
}

// TestJoiningNodeReadyOnlyWhenAdmitted: a node started with Join receives the log, and
// knows the cluster and its leader, as soon as the leader has added it to the Raft
// configuration; but it is not ready until the leader acknowledges the join. Once it is
// ready, the cluster lists it, and its join loop has ended: a removal that follows cannot
// be undone by the node's own join (the join/remove race of TestCLI).
func TestJoiningNodeReadyOnlyWhenAdmitted(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3})
	leader := c.waitLeader()
	seed := startHoldingSeed(t)
	cfg := c.cfgs[0]
	cfg.ID, cfg.DataDir, cfg.AdminAddr = "n4", t.TempDir(), ""
	cfg.RaftAddr, cfg.ClientAddr, cfg.Bootstrap, cfg.Join = "127.0.0.1:0", "127.0.0.1:0", nil, []string{seed.addr}
	n, err := Start(cfg, c.reg(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		seed.stop() // a held join request would keep the node's Close waiting
		n.Close()
	})

	var req wire.Request
	select {
	case req = <-seed.requests:
	case <-time.After(30 * time.Second):
		t.Fatal("the node sent no join request")
	}
	var j wire.JoinArgs
	if err := msgpack.Unmarshal(req.Args, &j); err != nil || j.ID != "n4" {
		t.Fatalf("join request %+v (%v)", j, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := leader.seq.AddVoter(ctx, j.ID, j.RaftAddr); err != nil {
		t.Fatal(err)
	}
	// The node applies the log: it knows the cluster and a leader...
	testutil.WaitFor(t, 30*time.Second, func() error {
		if _, ok := n.fsm.Cluster(); !ok {
			return errors.New("cluster identity not applied yet")
		}
		if id, _ := n.seq.Leader(); id == "" {
			return errors.New("no leader known yet")
		}
		return nil
	})
	// ...but its join is not acknowledged: it must not say it is ready.
	if err := n.Ready(); !errors.Is(err, ErrJoining) || !errors.Is(err, wire.ErrNotReady) {
		t.Fatalf("Ready before the join is acknowledged: got %v, want %v wrapped with %v", err, ErrJoining, wire.ErrNotReady)
	}
	if err := n.Readiness(); err == nil {
		t.Fatal("Readiness before the join is acknowledged: got nil, want an error")
	}
	if st := n.Status(); st.Ready {
		t.Fatal("status says ready before the join is acknowledged")
	}

	seed.forward <- c.waitLeader().ClientAddr()
	testutil.WaitFor(t, 30*time.Second, n.Ready)
	// Ready: the leader that acknowledged the join has applied the node's addresses.
	listed := false
	for _, m := range c.Nodes {
		if m != nil && m.fsm.Nodes()["n4"].ClientAddr == n.ClientAddr() {
			listed = true
		}
	}
	if !listed {
		t.Fatal("n4 is ready, but no member lists its addresses")
	}
}

// roundTrip sends one request to addr on a fresh connection and returns its response.
func roundTrip(ctx context.Context, addr, clusterID string, req *wire.Request) (wire.Response, error) {
	var resp wire.Response
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return resp, err
	}
	tlsCfg := testTLS.Clone()
	tlsCfg.ServerName = "127.0.0.1"
	tc := tls.Client(nc, tlsCfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return resp, err
	}
	nc = tc
	if _, err := wire.ClientHandshake(ctx, nc, clusterID); err != nil {
		nc.Close()
		return resp, err
	}
	c, err := wire.NewConn(nc, wire.ConnConfig{})
	if err != nil {
		nc.Close()
		return resp, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		nc.SetReadDeadline(dl)
	}
	if err := c.SendRequest(ctx, req); err != nil {
		return resp, err
	}
	err = c.RecvResponse(&resp)
	return resp, err
}

// TestPromotionDecidedBeforeARemoval: the leader decides to promote a learner from a view
// of the members taken before the learner was removed; the promotion must not bring the
// removed node back as a voter (CI saw "remove n4" succeed and n4 stay a voter).
func TestPromotionDecidedBeforeARemoval(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3})
	cl := c.dial(context.Background())
	i, err := c.AddNode(nil)
	if err != nil {
		t.Fatal(err)
	}
	id := c.Nodes[i].ID()
	testutil.WaitFor(t, 30*time.Second, func() error {
		if v := c.voters(); len(v) != 4 {
			return fmt.Errorf("voters %v", v)
		}
		return nil
	})
	lead := c.leader()
	views, err := lead.viewMembers(false)
	if err != nil {
		t.Fatal(err)
	}
	j := slices.IndexFunc(views, func(v memberView) bool { return v.ID == id })
	if j < 0 || views[j].status == nil {
		t.Fatalf("no view of %s: %+v", id, views)
	}
	stale := views[j]
	stale.Voter = false // as the view of a learner about to be promoted
	if err := cl.Cluster().RemoveMember(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if lead != c.leader() {
		t.Skip("leadership moved during the test; the stale view belongs to the old leader")
	}
	p := lead.considerPromotion(stale, views)
	if !strings.Contains(p.Note, "promotion failed") {
		t.Errorf("promotion of a removed node: progress %+v, want a failed promotion", p)
	}
	if v := c.voters(); len(v) != 3 || slices.Contains(v, id) {
		t.Fatalf("voters after the removal and the stale promotion: %v", v)
	}
}
