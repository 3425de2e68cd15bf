package jepsen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/internal/faultenv"
)

// The proxy backend (NetProxy), no root needed: every directed Raft link i→j (node i dialing node j) goes
// through a TCP proxy of the harness, listening on its own port, that node i's
// LOCKSTEP_FAULT_RAFT_ROUTES names for j's Raft address. The proxy forwards the bytes of
// both directions of each connection, so it can stop the bytes node a sends to node b on
// every connection between them, whoever dialed it: a cut from a to b stalls those bytes
// (the sender's TCP buffers fill, Raft's RPC deadlines pass and it gives up on the
// connection, as with packets dropped by a firewall); heal lets them through again. A
// delay holds each chunk for the given time before forwarding it.
//
// Clients go through proxies too: each worker's client (client.Config.Dial, ClientDial)
// reaches node j's client port through a proxy of its own, so a worker can be cut from
// some nodes, or hear nothing back from them. Endpoints are numbered nodes first (0 to
// n-1), then clients (n, n+1, ...); cuts, delays and losses are between endpoints. A
// cut client link rejects rather than stalls (a firewall's REJECT, not DROP): its
// connections are reset when a byte would cross the cut and new ones are closed at once,
// so a client learns fast which nodes it cannot reach. Raft links stall.

// ProxyNet is the set of link proxies of a cluster: the Network of the proxy backend.
// Safe for concurrent use.
type ProxyNet struct {
	raft    []string // nodes' Raft addresses
	client  []string // nodes' client addresses
	clients int      // client endpoints, numbered from len(raft)

	mu      sync.Mutex
	cut     map[[2]int]bool // [from, to]: bytes from node from to node to are stalled
	delay   time.Duration
	slow    map[[2]int]time.Duration // extra delay of one directed link
	loss    float64                  // chance that a chunk is "lost" and waits a retransmission
	changed chan struct{}            // closed and replaced at every change
	proxies map[[2]int]*proxy
	closed  bool
	wg      sync.WaitGroup // proxy goroutines
}

// proxy is the listener of link [i, j], the address it forwards to, and its open
// connections.
type proxy struct {
	ln     net.Listener
	target string
	conns  map[net.Conn]struct{}
}

// NewProxyNet opens a proxy for every directed link between the nodes at raft addresses, and
// one per client endpoint and node, forwarding to the nodes' client addresses (client
// may be empty when clients is 0).
func NewProxyNet(raft, client []string, clients int) (*ProxyNet, error) {
	if clients > 0 && len(client) != len(raft) {
		return nil, fmt.Errorf("jepsen: %d client addresses for %d nodes", len(client), len(raft))
	}
	nt := &ProxyNet{raft: raft, client: client, clients: clients, cut: map[[2]int]bool{}, slow: map[[2]int]time.Duration{},
		changed: make(chan struct{}), proxies: map[[2]int]*proxy{}}
	open := func(i, j int, target string) error {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			nt.Close()
			return err
		}
		p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
		nt.proxies[[2]int{i, j}] = p
		nt.wg.Add(1)
		go nt.accept(i, j, p)
		return nil
	}
	for i := range raft {
		for j := range raft {
			if i == j {
				continue
			}
			if err := open(i, j, raft[j]); err != nil {
				return nil, err
			}
		}
	}
	for c := range clients {
		for j := range raft {
			if err := open(len(raft)+c, j, client[j]); err != nil {
				return nil, err
			}
		}
	}
	return nt, nil
}

// Clients returns the number of client endpoints.
func (nt *ProxyNet) Clients() int { return nt.clients }

// ClientDial is client endpoint c's client.Config.Dial: a node's client address is dialed
// through c's proxy to that node; any other address directly.
func (nt *ProxyNet) ClientDial(c int) func(ctx context.Context, addr string) (net.Conn, error) {
	via := map[string]string{}
	for j, a := range nt.client {
		via[a] = nt.proxies[[2]int{len(nt.raft) + c, j}].ln.Addr().String()
	}
	return func(ctx context.Context, addr string) (net.Conn, error) {
		if v, ok := via[addr]; ok {
			addr = v
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

// Routes is node i's LOCKSTEP_FAULT_RAFT_ROUTES value: each peer's Raft address routed
// through the proxy of the link from i to it.
func (nt *ProxyNet) Routes(i int) string {
	var r []string
	for j, addr := range nt.raft {
		if j != i {
			r = append(r, addr+"="+nt.proxies[[2]int{i, j}].ln.Addr().String())
		}
	}
	return strings.Join(r, ",")
}

// Name is NetProxy.
func (nt *ProxyNet) Name() string { return NetProxy }

// NodeEnv routes node i's Raft connections through the proxies of its links.
func (nt *ProxyNet) NodeEnv(i int) []string {
	return []string{faultenv.RaftRoutes + "=" + nt.Routes(i)}
}

// Cut stalls the bytes of each directed link [from, to].
func (nt *ProxyNet) Cut(links ...[2]int) error {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	for _, l := range links {
		nt.cut[l] = true
	}
	nt.changedLocked()
	return nil
}

// SetLinkDelay holds every chunk from endpoint from to endpoint to for d more (0: none).
func (nt *ProxyNet) SetLinkDelay(from, to int, d time.Duration) error {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	nt.slow[[2]int{from, to}] = d
	nt.changedLocked()
	return nil
}

// SetLoss makes each chunk on every link "lost" with probability p: as TCP recovers a lost
// segment, it is delivered after a retransmission timeout (lossRTO, doubled for each
// further loss of the same chunk). 0 turns it off.
func (nt *ProxyNet) SetLoss(p float64) error {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	nt.loss = p
	nt.changedLocked()
	return nil
}

// lossRTO is the retransmission timeout a "lost" chunk waits: Linux's minimum RTO.
const lossRTO = 200 * time.Millisecond

// SetDelay holds every chunk of every link for d before forwarding it (0: none).
func (nt *ProxyNet) SetDelay(d time.Duration) error {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	nt.delay = d
	nt.changedLocked()
	return nil
}

// Heal removes every cut, the delays and the loss.
func (nt *ProxyNet) Heal() error {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	clear(nt.cut)
	clear(nt.slow)
	nt.delay, nt.loss = 0, 0
	nt.changedLocked()
	return nil
}

// Cuts returns the cut directed links as "a->b" for the timeline (nodes n1..., clients
// c0...).
func (nt *ProxyNet) Cuts() []string {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	return cutNames(nt.cut, len(nt.raft), nt.clients)
}

func (nt *ProxyNet) changedLocked() {
	close(nt.changed)
	nt.changed = make(chan struct{})
}

// state returns whether from→to is cut, its delay, its loss probability, and the
// channel closed at the next change.
func (nt *ProxyNet) state(from, to int) (bool, time.Duration, float64, <-chan struct{}) {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	return nt.cut[[2]int{from, to}], nt.delay + nt.slow[[2]int{from, to}], nt.loss, nt.changed
}

// rejects reports whether link [i, j] is a client link cut in either direction.
func (nt *ProxyNet) rejects(i, j int) bool {
	if i < len(nt.raft) && j < len(nt.raft) {
		return false
	}
	nt.mu.Lock()
	defer nt.mu.Unlock()
	return nt.cut[[2]int{i, j}] || nt.cut[[2]int{j, i}]
}

// Close closes every proxy and connection and waits for the proxies' goroutines.
func (nt *ProxyNet) Close() error {
	nt.mu.Lock()
	if nt.closed {
		nt.mu.Unlock()
		return nil
	}
	nt.closed = true
	for _, p := range nt.proxies {
		p.ln.Close()
		for c := range p.conns {
			c.Close()
		}
	}
	nt.changedLocked()
	nt.mu.Unlock()
	nt.wg.Wait()
	return nil
}

// track adds (or with add false removes) c to p's connections; false if nt is closed.
func (nt *ProxyNet) track(p *proxy, c net.Conn, add bool) bool {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	if !add {
		delete(p.conns, c)
		return true
	}
	if nt.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// accept serves link [i, j] until the listener closes.
func (nt *ProxyNet) accept(i, j int, p *proxy) {
	defer nt.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		if nt.rejects(i, j) { // a client link that is cut refuses new connections
			down.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			down.Close()
			continue
		}
		if !nt.track(p, down, true) || !nt.track(p, up, true) {
			down.Close()
			up.Close()
			return
		}
		nt.wg.Add(2)
		done := make(chan struct{})
		closeBoth := sync.OnceFunc(func() {
			close(done)
			down.Close()
			up.Close()
			nt.track(p, down, false)
			nt.track(p, up, false)
		})
		go nt.pump(i, j, down, up, done, closeBoth) // bytes node i sends to j
		go nt.pump(j, i, up, down, done, closeBoth) // j's answers to i
	}
}

// pump copies src to dst as bytes from endpoint from to endpoint to, stalling while that
// direction is cut, holding each chunk for the delay, and for a retransmission timeout
// when the chunk is "lost".
func (nt *ProxyNet) pump(from, to int, src, dst net.Conn, done chan struct{}, closeBoth func()) {
	defer nt.wg.Done()
	defer closeBoth()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		read := time.Now()
		var lost time.Duration // retransmission waits of this chunk so far
		for n > 0 {
			cut, delay, loss, changed := nt.state(from, to)
			if cut && (from >= len(nt.raft) || to >= len(nt.raft)) {
				return // a cut client link resets its connections, as a firewall's REJECT
			}
			if cut {
				select {
				case <-changed:
					continue
				case <-done:
					return
				}
			}
			if wait := time.Until(read.Add(delay)); wait > 0 {
				select {
				case <-time.After(wait):
				case <-changed:
					continue // a heal or a cut: look again
				case <-done:
					return
				}
			}
			if loss > 0 && rand.Float64() < loss {
				lost = max(lossRTO, 2*lost)
				read = time.Now().Add(lost - delay) // wait the RTO, then the delay's rest
				continue
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			break
		}
		if err != nil { // EOF or a closed connection: close both sides
			return
		}
	}
}
