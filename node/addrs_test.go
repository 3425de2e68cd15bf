package node

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/netaddr"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/replica"
)

// TestAdvertisedAddrs: nodes that bind 127.0.0.1 with OS-chosen ports and advertise
// another name for the same machine ("localhost", taking the bound port) form a secure
// cluster over the advertised names. The Raft configuration, the nodes' records in the
// log and the statuses hold the advertised addresses, never the bound ones; a client
// given only a follower's advertised address reaches the leader through the redirect; a
// fourth node joins by its advertised addresses and is promoted.
//
// Both kinds of Raft transport advertise: the TLS stream layer of a secure node and the
// sequencer's own layer of an insecure one (hashicorp/raft's TCP transport cannot).
func TestAdvertisedAddrs(t *testing.T) {
	for _, secure := range []bool{true, false} {
		t.Run(map[bool]string{true: "secure", false: "insecure"}[secure], func(t *testing.T) { testAdvertisedAddrs(t, secure) })
	}
}

func testAdvertisedAddrs(t *testing.T, secure bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := Config{CertsDir: testCertsDir, Replica: replica.Config{Partitions: 2}, Logger: testLogger(t), AdminAddr: "127.0.0.1:0",
		RaftAdvertise: "localhost", ClientAdvertise: "localhost", AdminAdvertise: "localhost"}
	ccfg := testClientConfig()
	if !secure {
		cfg.CertsDir, cfg.Insecure = "", true
		ccfg = client.Config{Insecure: true}
	}
	lc, err := StartLocalCluster(ctx, LocalClusterOptions{Nodes: 3, Dir: t.TempDir(), Node: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	advertised := func(what, addr string) {
		t.Helper()
		if !strings.HasPrefix(addr, "localhost:") || strings.HasSuffix(addr, ":0") {
			t.Errorf("%s: got %q, want localhost:PORT", what, addr)
		}
	}
	for _, n := range lc.Nodes {
		advertised(n.ID()+" RaftAddr", n.RaftAddr())
		advertised(n.ID()+" ClientAddr", n.ClientAddr())
		advertised(n.ID()+" AdminAddr", n.AdminAddr())
		if got, want := n.ClientListenAddr(), "127.0.0.1:"+port(n.ClientAddr()); got != want {
			t.Errorf("%s: client bound at %q, want %q", n.ID(), got, want)
		}
		if got, want := n.AdminListenAddr(), "127.0.0.1:"+port(n.AdminAddr()); got != want {
			t.Errorf("%s: admin bound at %q, want %q", n.ID(), got, want)
		}
		st := n.Status()
		advertised(n.ID()+" status client", st.ClientAddr)
		advertised(n.ID()+" status raft", st.RaftAddr)
		advertised(n.ID()+" status admin", st.AdminAddr)
	}
	leader := lc.Nodes[lc.Leader()]
	follower := lc.Nodes[(lc.Leader()+1)%3]
	ccfg.Addrs = []string{follower.ClientAddr()}
	cl, err := client.Open(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var sum int64
	testutil.WaitFor(t, 30*time.Second, func() error {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		defer ccancel()
		return cl.Invoke(cctx, "counter.add", []byte("k"), builtin.CounterAddArgs{Delta: 1}, &sum)
	})
	i, err := lc.AddNode(nil)
	if err != nil {
		t.Fatal(err)
	}
	n4 := lc.Nodes[i]
	testutil.WaitFor(t, 60*time.Second, func() error { return n4.Ready() })
	members, err := leader.Sequencer().Members()
	if err != nil || len(members) != 4 {
		t.Fatalf("members %+v, %v: want 4", members, err)
	}
	for _, m := range members {
		advertised("Raft configuration, member "+m.ID, m.Addr)
	}
	testutil.WaitFor(t, 30*time.Second, func() error {
		nodes := leader.FSM().Nodes()
		if len(nodes) != 4 {
			return errors.New("not every node is recorded yet")
		}
		for id, info := range nodes {
			if !strings.HasPrefix(info.ClientAddr, "localhost:") || !strings.HasPrefix(info.RaftAddr, "localhost:") {
				return errors.New("node " + id + " is recorded at " + info.ClientAddr + " / " + info.RaftAddr)
			}
		}
		return nil
	})
	if _, err := lc.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// TestAdvertiseConfig: a listen address that binds every interface needs an advertised
// one, an advertised address must be one others can dial, and an admin advertise address
// needs an admin server: each is refused by Validate, naming the flag to give, and Start
// binds nothing then.
func TestAdvertiseConfig(t *testing.T) {
	base := Config{ID: "n1", DataDir: t.TempDir(), Insecure: true}
	for i, tc := range []struct {
		mod  func(*Config)
		want string // "" valid
	}{
		{func(c *Config) {}, ""},
		{func(c *Config) { c.RaftAddr, c.RaftAdvertise = "0.0.0.0:0", "n1.internal:7001" }, ""},
		{func(c *Config) { c.ClientAddr, c.ClientAdvertise = "[::]:0", "n1.internal" }, ""},
		{func(c *Config) { c.RaftAddr = "0.0.0.0:0" }, "--raft-advertise"},
		{func(c *Config) { c.ClientAddr = "0.0.0.0:0" }, "--client-advertise"},
		{func(c *Config) { c.AdminAddr = ":0" }, "--admin-advertise"},
		{func(c *Config) { c.ClientAddr, c.ClientAdvertise = "0.0.0.0:0", "0.0.0.0:8001" }, "not an unspecified address"},
		{func(c *Config) { c.RaftAdvertise = "::" }, "not an unspecified address"},
		{func(c *Config) { c.AdminAdvertise = "n1" }, "without an admin address"},
		{func(c *Config) { c.ProbeAddr = "0.0.0.0:0" }, ""},
		{func(c *Config) { c.ProbeAddr = "9090" }, "probe address"},
	} {
		cfg := base
		tc.mod(&cfg)
		err := cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("#%d: got %v, want nil", i, err)
		case tc.want != "" && (err == nil || !errors.Is(err, ErrNodeConfig) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("#%d: got %v, want ErrNodeConfig with %q", i, err, tc.want)
		case tc.want != "" && strings.HasPrefix(tc.want, "--") && !errors.Is(err, netaddr.ErrAddress):
			t.Errorf("#%d: got %v, want it to wrap netaddr.ErrAddress", i, err)
		case tc.want != "":
			if n, err := Start(cfg, procedures.Builtins()); err == nil {
				n.Close()
				t.Errorf("#%d: Start succeeded", i)
			}
		}
	}
}

// TestProbeServer: the probe port answers /healthz and /readyz over plain HTTP with no
// client certificate, from before the node is ready (503 and the reason) to after (200),
// and every other path, the admin server's /metrics and /status among them, is 404; the
// admin port of the same secure node still refuses plain HTTP.
func TestProbeServer(t *testing.T) {
	n, err := Start(Config{ID: "n1", DataDir: t.TempDir(), CertsDir: testCertsDir, Logger: testLogger(t),
		RaftAddr: "127.0.0.1:0", ClientAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", ProbeAddr: "127.0.0.1:0",
		Replica: replica.Config{Partitions: 2}}, procedures.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	get := func(addr, path string) (int, string) {
		t.Helper()
		resp, err := hc.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s%s: %v", addr, path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	probe := n.ProbeAddr()
	if code, body := get(probe, "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q, want 200 ok", code, body)
	}
	if code, body := get(probe, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, ErrNotInitialised.Error()) {
		t.Errorf("/readyz before the bootstrap: %d %q, want 503 and %q", code, body, ErrNotInitialised)
	}
	if err := n.Bootstrap([]Peer{{ID: "n1", RaftAddr: n.RaftAddr(), ClientAddr: n.ClientAddr()}}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, func() error {
		if code, body := get(probe, "/readyz"); code != http.StatusOK || body != "ready\n" {
			return errors.New(body)
		}
		return nil
	})
	for i, path := range []string{"/", "/metrics", "/status", "/debug/pprof/", "/healthz/x", "/readyz/", "/HEALTHZ", "/favicon.ico"} {
		if code, _ := get(probe, path); code != http.StatusNotFound {
			t.Errorf("#%d: %s on the probe port: %d, want 404", i, path, code)
		}
	}
	if resp, err := hc.Get("http://" + n.AdminAddr() + "/healthz"); err == nil {
		ok := resp.StatusCode == http.StatusOK
		resp.Body.Close()
		if ok {
			t.Errorf("the admin port answered plain HTTP with 200")
		}
	}
}
