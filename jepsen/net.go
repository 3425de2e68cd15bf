package jepsen

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// Network faults without root: every directed Raft link i→j (node i dialing node j) goes
// through a TCP proxy of the harness, listening on its own port, that node i's
// LOCKSTEP_FAULT_RAFT_ROUTES names for j's Raft address. The proxy forwards the bytes of
// both directions of each connection, so it can stop the bytes node a sends to node b on
// every connection between them, whoever dialed it: a cut from a to b stalls those bytes
// (the sender's TCP buffers fill, Raft's RPC deadlines pass and it gives up on the
// connection, as with packets dropped by a firewall); heal lets them through again. A
// delay holds each chunk for the given time before forwarding it.

// Net is the set of link proxies of a cluster. Safe for concurrent use.
type Net struct {
	raft []string // nodes' Raft addresses

	mu      sync.Mutex
	cut     map[[2]int]bool // [from, to]: bytes from node from to node to are stalled
	delay   time.Duration
	changed chan struct{} // closed and replaced at every change
	proxies map[[2]int]*proxy
	closed  bool
	wg      sync.WaitGroup // proxy goroutines
}

// proxy is the listener of link [i, j] and its open connections.
type proxy struct {
	ln    net.Listener
	conns map[net.Conn]struct{}
}

// NewNet opens a proxy for every directed link between the nodes at raft addresses.
func NewNet(raft []string) (*Net, error) {
	nt := &Net{raft: raft, cut: map[[2]int]bool{}, changed: make(chan struct{}), proxies: map[[2]int]*proxy{}}
	for i := range raft {
		for j := range raft {
			if i == j {
				continue
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				nt.Close()
				return nil, err
			}
			p := &proxy{ln: ln, conns: map[net.Conn]struct{}{}}
			nt.proxies[[2]int{i, j}] = p
			nt.wg.Add(1)
			go nt.accept(i, j, p)
		}
	}
	return nt, nil
}

// Routes is node i's LOCKSTEP_FAULT_RAFT_ROUTES value: each peer's Raft address routed
// through the proxy of the link from i to it.
func (nt *Net) Routes(i int) string {
	var r []string
	for j, addr := range nt.raft {
		if j != i {
			r = append(r, addr+"="+nt.proxies[[2]int{i, j}].ln.Addr().String())
		}
	}
	return strings.Join(r, ",")
}

// Cut stops the bytes from node from to node to (one direction).
func (nt *Net) Cut(from, to int) {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	nt.cut[[2]int{from, to}] = true
	nt.changedLocked()
}

// Partition cuts every link, both ways, between nodes of different groups. Nodes in no
// group keep all their links.
func (nt *Net) Partition(groups ...[]int) {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	for gi, g := range groups {
		for gj, h := range groups {
			if gi == gj {
				continue
			}
			for _, a := range g {
				for _, b := range h {
					nt.cut[[2]int{a, b}] = true
				}
			}
		}
	}
	nt.changedLocked()
}

// SetDelay holds every chunk of every link for d before forwarding it (0: none).
func (nt *Net) SetDelay(d time.Duration) {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	nt.delay = d
	nt.changedLocked()
}

// Heal removes every cut and the delay.
func (nt *Net) Heal() {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	clear(nt.cut)
	nt.delay = 0
	nt.changedLocked()
}

// Cuts returns the cut directed links as "a->b" for the timeline.
func (nt *Net) Cuts() []string {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	var out []string
	for i := range nt.raft {
		for j := range nt.raft {
			if nt.cut[[2]int{i, j}] {
				out = append(out, fmt.Sprintf("n%d->n%d", i+1, j+1))
			}
		}
	}
	return out
}

func (nt *Net) changedLocked() {
	close(nt.changed)
	nt.changed = make(chan struct{})
}

// state returns whether from→to is cut, the delay, and the channel closed at the next
// change.
func (nt *Net) state(from, to int) (bool, time.Duration, <-chan struct{}) {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	return nt.cut[[2]int{from, to}], nt.delay, nt.changed
}

// Close closes every proxy and connection and waits for the proxies' goroutines.
func (nt *Net) Close() {
	nt.mu.Lock()
	if nt.closed {
		nt.mu.Unlock()
		return
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
}

// track adds (or with add false removes) c to p's connections; false if nt is closed.
func (nt *Net) track(p *proxy, c net.Conn, add bool) bool {
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
func (nt *Net) accept(i, j int, p *proxy) {
	defer nt.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.DialTimeout("tcp", nt.raft[j], 2*time.Second)
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

// pump copies src to dst as bytes from node from to node to, stalling while that
// direction is cut and holding each chunk for the delay.
func (nt *Net) pump(from, to int, src, dst net.Conn, done chan struct{}, closeBoth func()) {
	defer nt.wg.Done()
	defer closeBoth()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		read := time.Now()
		for n > 0 {
			cut, delay, changed := nt.state(from, to)
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
