package jepsen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/faultenv"
)

// envTestIPTables, set to 1 (by .ci/run where iptables works), makes the iptables tests
// fail rather than skip when the backend cannot run.
const envTestIPTables = "LOCKSTEP_TEST_IPTABLES"

// needIPTables skips the test unless the iptables backend can run here.
func needIPTables(t *testing.T) {
	t.Helper()
	if err := IPTablesUsable(); err != nil {
		if os.Getenv(envTestIPTables) == "1" {
			t.Fatalf("%s=1 but the iptables backend cannot run: %v", envTestIPTables, err)
		}
		t.Skipf("the iptables backend cannot run here — run the tests as root with iptables installed: %v", err)
	}
}

// ownChains returns the harness chains of this process, in any table.
func ownChains(t *testing.T) []string {
	t.Helper()
	names, err := harnessChains()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, fmt.Sprintf("%s%d-", chainPrefix, os.Getpid())) {
			out = append(out, n)
		}
	}
	return out
}

// jumpsTo reports whether OUTPUT jumps to chain in any table.
func jumpsTo(t *testing.T, chain string) bool {
	t.Helper()
	for _, tb := range chainTables {
		b, err := exec.Command("iptables", "-w", "-t", tb, "-S", "OUTPUT").Output()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "-j "+chain+"\n") {
			return true
		}
	}
	return false
}

// uidDial dials addr from a socket owned by uid, as a node process running as uid would:
// the socket is made on a locked thread whose filesystem uid (which the iptables owner
// match reads from the socket's file) is uid for that moment.
func uidDial(uid int, addr string, timeout time.Duration) (net.Conn, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	syscall.Setfsuid(uid)
	defer syscall.Setfsuid(0)
	return net.DialTimeout("tcp", addr, timeout)
}

// probeNet stands for a cluster on the iptables backend with real sockets: n "nodes",
// each a listener whose connections to the others are opened by sockets of its node's
// uid, and client endpoints dialing from their worker addresses.
type probeNet struct {
	n, clients int
	addrs      []string
	nt         *IPTablesNet

	mu       sync.Mutex
	accepted map[[2]int]net.Conn // [opener, node]: the node's side of the connection
}

func newProbeNet(t *testing.T, n, clients int) *probeNet {
	t.Helper()
	p := &probeNet{n: n, clients: clients, accepted: map[[2]int]net.Conn{}}
	var ports [][]int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		p.addrs = append(p.addrs, ln.Addr().String())
		ports = append(ports, []int{addrPort(ln.Addr().String())})
		go p.accept(ln)
	}
	nt, err := NewIPTablesNet(ports, clients)
	if err != nil {
		t.Fatal(err)
	}
	p.nt = nt
	t.Cleanup(func() { nt.Close() })
	return p
}

// accept keeps each connection under the [opener, node] pair its first two bytes name.
func (p *probeNet) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			var hello [2]byte
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err := io.ReadFull(c, hello[:]); err != nil {
				c.Close()
				return
			}
			c.SetReadDeadline(time.Time{})
			p.mu.Lock()
			p.accepted[[2]int{int(hello[0]), int(hello[1])}] = c
			p.mu.Unlock()
		}()
	}
}

// dial opens a connection from endpoint from to node to: as nodeUID(from) for a node,
// from workerIP for a client, from 127.0.0.1 as root for -1 (the harness's own client).
func (p *probeNet) dial(from, to int, timeout time.Duration) (net.Conn, error) {
	switch {
	case from < 0:
		return net.DialTimeout("tcp", p.addrs[to], timeout)
	case from < p.n:
		return uidDial(nodeUID(from), p.addrs[to], timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return p.nt.ClientDial(from-p.n)(ctx, p.addrs[to])
}

// link is an open connection from opener to node: both ends.
type link struct {
	opener, node int
	out, in      net.Conn // opener's end, node's end
}

// open opens a connection from opener to node and waits for the node's end.
func (p *probeNet) open(t *testing.T, opener, node int) link {
	t.Helper()
	c, err := p.dial(opener, node, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %d->%d before the cut: %v", opener, node, err)
	}
	t.Cleanup(func() { c.Close() })
	key := [2]int{opener + 1, node} // +1: the harness's client is -1
	if _, err := c.Write([]byte{byte(key[0]), byte(key[1])}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		p.mu.Lock()
		in := p.accepted[key]
		delete(p.accepted, key)
		p.mu.Unlock()
		if in != nil {
			t.Cleanup(func() { in.Close() })
			return link{opener: opener, node: node, out: c, in: in}
		}
		if time.Now().After(deadline) {
			t.Fatalf("connection %d->%d never accepted", opener, node)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// passes reports whether a byte written on w arrives on r within wait, and the read's
// error.
func passes(w, r net.Conn, wait time.Duration) (bool, error) {
	w.SetWriteDeadline(time.Now().Add(wait))
	w.Write([]byte{'x'}) // a reset connection fails here or at the read
	r.SetReadDeadline(time.Now().Add(wait))
	_, err := io.ReadFull(r, make([]byte, 1))
	return err == nil, err
}

// check is one expectation: bytes from endpoint from to endpoint to on a connection
// opener opened (or a new connection, when fresh) pass or not.
type check struct {
	from, to, opener int
	l                *link // the connection, nil when fresh
	fresh            bool
	want             bool
	// wantErr, if not nil, is the error a failed check must end with at once: a client
	// whose link is rejected is refused or reset, it does not wait for a timeout.
	wantErr error
	got     bool
	err     error
}

func (c check) String() string {
	what := fmt.Sprintf("bytes %d->%d on a connection %d opened", c.from, c.to, c.opener)
	if c.fresh {
		what = fmt.Sprintf("a new connection %d->%d", c.from, c.to)
	}
	return fmt.Sprintf("%s: got pass=%v (%v), want %v (%v)", what, c.got, c.err, c.want, c.wantErr)
}

// TestIPTablesShapes applies every network shape of the nemesis (and loss) to the
// iptables backend over real sockets — the nodes' owned by their own uids, the clients'
// from their worker addresses — and checks, for every ordered pair and every connection,
// which bytes pass: a cut a->b stops a's bytes to b on connections either of them opened
// and nothing else (one-way cuts stay one-way), a cut client link refuses new
// connections and resets open ones at once (ECONNREFUSED, ECONNRESET: no timeout), the
// harness's own connections (root, 127.0.0.1) are never touched, and the chain is gone
// after Close.
func TestIPTablesShapes(t *testing.T) {
	t.Parallel()
	needIPTables(t)
	const n, clients = 5, 2
	perm := []int{3, 0, 4, 1, 2}
	// A byte that must pass gets long to arrive (the machine may be loaded); one that must
	// not would arrive at once if a rule let it through, so it is waited for less.
	const passWait, stopWait = 3 * time.Second, 700 * time.Millisecond
	type shape struct {
		name string
		cuts [][2]int
		loss float64
	}
	var shapes []shape
	for _, f := range []string{FaultIsolate, FaultHalves, FaultBridge, FaultOneWay, FaultRing, FaultClientsCut,
		FaultIsolateLeaderClients, FaultLostReplies} {
		cuts, ok := shapeCuts(f, perm, perm[0], n, clients)
		if !ok {
			t.Fatalf("%s: no shape", f)
		}
		shapes = append(shapes, shape{name: f, cuts: cuts})
	}
	shapes = append(shapes, shape{name: FaultExpireSessions + " (second phase)", cuts: allClientsCut(n, clients)},
		shape{name: FaultLoss + " 100%", loss: 1})

	p := newProbeNet(t, n, clients)
	chain := p.nt.Chain()
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			cut := map[[2]int]bool{}
			for _, l := range sh.cuts {
				cut[l] = true
			}
			lost := sh.loss > 0
			// Connections opened before the fault: between every two nodes each way, from
			// every client to every node, and the harness's own to every node.
			var links []link
			for a := range n + clients {
				for b := range n {
					if a != b {
						links = append(links, p.open(t, a, b))
					}
				}
			}
			for b := range n {
				links = append(links, p.open(t, -1, b))
			}
			if err := p.nt.Cut(sh.cuts...); err != nil {
				t.Fatal(err)
			}
			if err := p.nt.SetLoss(sh.loss); err != nil {
				t.Fatal(err)
			}
			var checks []*check
			for _, l := range links {
				a, b := l.opener, l.node
				if a < 0 { // the harness's own connection: never cut
					checks = append(checks, &check{from: a, to: b, opener: a, l: &l, want: true},
						&check{from: b, to: a, opener: a, l: &l, want: true})
					continue
				}
				// A rejected client link resets the whole connection: the client's read
				// ends with ECONNRESET (its own write drew the reset).
				reset := a >= n && cut[[2]int{a, b}]
				back := &check{from: b, to: a, opener: a, l: &l, want: !cut[[2]int{b, a}] && !reset && !lost}
				if reset && !lost {
					back.wantErr = syscall.ECONNRESET
				}
				checks = append(checks, &check{from: a, to: b, opener: a, l: &l, want: !cut[[2]int{a, b}] && !lost}, back)
				// A new connection needs both directions (its handshake); a client's to a
				// node it is cut from either way is refused at once.
				fresh := &check{from: a, to: b, opener: a, fresh: true, want: !cut[[2]int{a, b}] && !cut[[2]int{b, a}] && !lost}
				if a >= n && !fresh.want && !lost {
					fresh.wantErr = syscall.ECONNREFUSED
				}
				checks = append(checks, fresh)
			}
			var wg sync.WaitGroup
			for _, c := range checks {
				wg.Add(1)
				go func() {
					defer wg.Done()
					wait := stopWait
					if c.want {
						wait = passWait
					}
					if c.fresh {
						conn, err := p.dial(c.from, c.to, wait)
						if err == nil {
							conn.Close()
						}
						c.got, c.err = err == nil, err
						return
					}
					w, r := c.l.out, c.l.in
					if c.from == c.l.node {
						w, r = c.l.in, c.l.out
					}
					c.got, c.err = passes(w, r, wait)
				}()
			}
			wg.Wait()
			for _, c := range checks {
				if c.got != c.want || (c.wantErr != nil && !errors.Is(c.err, c.wantErr)) {
					t.Errorf("%s (cuts %v)", c, p.nt.Cuts())
				}
			}
			if err := p.nt.Heal(); err != nil {
				t.Fatal(err)
			}
			if got := p.nt.Cuts(); len(got) != 0 {
				t.Fatalf("after the heal: cuts %v", got)
			}
			for a := range n + clients {
				for b := range n {
					if a != b {
						if c, err := p.dial(a, b, 2*time.Second); err != nil {
							t.Errorf("after the heal: dial %d->%d: %v", a, b, err)
						} else {
							c.Close()
						}
					}
				}
			}
		})
	}
	if !jumpsTo(t, chain) {
		t.Fatalf("OUTPUT does not jump to %s while the net is open", chain)
	}
	if err := p.nt.Close(); err != nil {
		t.Fatal(err)
	}
	names, err := harnessChains()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, chain) || jumpsTo(t, chain) {
		t.Fatalf("after Close: chain %s left (%v), or OUTPUT's jump to it (%v)", chain, names, jumpsTo(t, chain))
	}
}

// TestIPTablesSweep: a chain left by a process that is gone (killed before it could
// remove it) is removed by the next backend that starts; a live process's chain is kept.
func TestIPTablesSweep(t *testing.T) {
	needIPTables(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	left := fmt.Sprintf("%s%d-beef", chainPrefix, dead.Process.Pid)
	live := fmt.Sprintf("%s%d-cafe", chainPrefix, os.Getpid())
	for _, name := range []string{left, live} {
		for _, tb := range chainTables {
			if err := errors.Join(iptables("-t", tb, "-N", name), iptables("-t", tb, "-A", "OUTPUT", "-j", name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() { removeChain(left); removeChain(live) })
	nt, err := NewIPTablesNet([][]int{{1}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer nt.Close()
	names, err := harnessChains()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want bool
	}{{left, false}, {live, true}} {
		got := false
		for _, n := range names {
			got = got || n == tc.name
		}
		if got != tc.want || jumpsTo(t, tc.name) != tc.want {
			t.Errorf("%s: present %v, jumped to %v; want %v", tc.name, got, jumpsTo(t, tc.name), tc.want)
		}
	}
}

// TestIPTablesRunRemovesChain: a run on the iptables backend that fails — its nodes exit
// at start (a bad fault variable), or the run is interrupted in the middle of a fault (as
// by SIGINT, which cancels the context of `lockstep jepsen run`: TestJepsenRunInterrupted
// sends the signal), or panics — leaves no chain behind, and the interrupted one is
// invalid.
func TestIPTablesRunRemovesChain(t *testing.T) {
	needIPTables(t)
	if testing.Short() {
		t.Skip("real-process harness run")
	}
	if got := ownChains(t); len(got) != 0 {
		t.Fatalf("chains of this process before the runs: %v", got)
	}
	_, err := Run(context.Background(), Config{Bin: testBin, Results: t.TempDir(), Workload: "counter", Net: NetIPTables,
		Duration: 2 * time.Second, Env: []string{faultenv.CrashStore + "=bogus"}, Out: tWriter{t}})
	if err == nil || !strings.Contains(err.Error(), "exited while starting") {
		t.Fatalf("run with failing nodes: got %v, want the nodes' exit", err)
	}
	if got := ownChains(t); len(got) != 0 {
		t.Fatalf("after a failed start: chains %v left", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rep, err := Run(ctx, Config{Bin: testBin, Results: t.TempDir(), Workload: "counter", Net: NetIPTables,
		Nemesis: "partition", Duration: time.Minute, IntervalMin: time.Second, IntervalMax: time.Second,
		Out: onLine{tWriter{t}, " start ", cancel}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Valid || !strings.HasPrefix(rep.Reason, "interrupted") || rep.Chain == "" {
		t.Errorf("interrupted run: want it invalid, interrupted, with its chain named:\n%s", rep.Text())
	}
	if got := ownChains(t); len(got) != 0 {
		t.Fatalf("after an interrupted run: chains %v left", got)
	}
	// A panic in the run's goroutine (here in its progress writer, when a fault starts)
	// unwinds through the run's deferred close.
	func() {
		defer func() {
			if r := recover(); r != "planted panic" {
				t.Fatalf("recovered %v, want the planted panic", r)
			}
		}()
		Run(context.Background(), Config{Bin: testBin, Results: t.TempDir(), Workload: "counter", Net: NetIPTables,
			Nemesis: "partition", Duration: time.Minute, IntervalMin: time.Second, IntervalMax: time.Second,
			Out: onLine{tWriter{t}, " start ", func() { panic("planted panic") }}})
	}()
	if got := ownChains(t); len(got) != 0 {
		t.Fatalf("after a panic: chains %v left", got)
	}
}

// onLine is a progress writer that calls f at every line containing at.
type onLine struct {
	w  io.Writer
	at string
	f  func()
}

func (o onLine) Write(p []byte) (int, error) {
	if strings.Contains(string(p), o.at) {
		o.f()
	}
	return o.w.Write(p)
}
