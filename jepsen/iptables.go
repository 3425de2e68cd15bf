package jepsen

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
)

// The iptables backend (NetIPTables), as root: every node runs as its own unprivileged uid
// (nodeUID), the nodes talk to each other directly on 127.0.0.1, and the harness drops
// their packets with rules in a chain of the run's own (iptables_chain.go).
//
// Marks. A mangle rule per node marks each connection the node opens with its uid
// (CONNMARK on the first packet, matched by owner). A directed cut a→b of two nodes then
// drops two kinds of packets in OUTPUT (every loopback packet passes there once):
//
//   - on connections a opened: mark uid(a), destination port one of b's ports;
//   - on connections b opened: mark uid(b), source port one of a's ports (a's answers,
//     its SYN-ACK included, which no owner match would see).
//
// Both sides of a pair of rules name ports of this run's nodes, so two runs at once (which
// share the uids) never touch each other's traffic.
//
// Clients. Worker c's connections leave from a loopback address of its own, workerIP(c)
// (127.76.83.c+1), so its packets are told apart by address. A cut client→node rejects
// them with a TCP reset (the proxy's semantics: a client learns at once that it cannot
// reach the node); a cut node→client drops the node's packets to the worker but its
// resets (those REJECT sends on the node's behalf leave through OUTPUT too) and rejects
// the worker's new connections to the node, so requests on an open connection still
// arrive but their answers are lost (the worker notices at its request timeout).
//
// Loss drops each packet of every node's and worker's connection with probability p
// (-m statistic --mode random); TCP retransmits it, as after a real loss.

// nodeUIDBase is node 0's uid and gid; node i runs as nodeUIDBase+i, which is also the
// mark of the connections it opens.
const nodeUIDBase = 61000

// nodeUID is the uid (and gid, and connection mark) of node i's process.
func nodeUID(i int) int { return nodeUIDBase + i }

// workerNet is the loopback network the workers' connections come from.
const workerNet = "127.76.83.0/24"

// maxIPTablesClients is the most client endpoints the iptables backend can address.
const maxIPTablesClients = 250

// workerIP is client endpoint c's source address.
func workerIP(c int) net.IP { return net.IPv4(127, 76, 83, byte(c+1)) }

// maxMultiport is the most ports one multiport match takes.
const maxMultiport = 15

// IPTablesNet is the Network of the iptables backend. Safe for concurrent use.
type IPTablesNet struct {
	ports   [][]int // each node's listening ports
	clients int
	chain   *iptChain

	mu     sync.Mutex
	cut    map[[2]int]bool
	loss   float64
	closed bool
}

// NewIPTablesNet creates the run's chain for nodes listening on ports (node i on
// ports[i], running as nodeUID(i)) and clients client endpoints, with the connection
// marks in place and nothing cut. Close removes the chain.
func NewIPTablesNet(ports [][]int, clients int) (*IPTablesNet, error) {
	if clients < 0 || clients > maxIPTablesClients {
		return nil, fmt.Errorf("jepsen: %d client endpoints: the iptables backend takes 0 to %d", clients, maxIPTablesClients)
	}
	for i, p := range ports {
		if len(p) == 0 || len(p) > maxMultiport {
			return nil, fmt.Errorf("jepsen: node %d has %d ports: want 1 to %d", i, len(p), maxMultiport)
		}
	}
	ch, err := newChain()
	if err != nil {
		return nil, err
	}
	nt := &IPTablesNet{ports: ports, clients: clients, chain: ch, cut: map[[2]int]bool{}}
	if err := nt.apply(); err != nil {
		nt.Close()
		return nil, err
	}
	return nt, nil
}

// Name is NetIPTables.
func (nt *IPTablesNet) Name() string { return NetIPTables }

// Chain is the name of the run's iptables chain (in the filter and mangle tables).
func (nt *IPTablesNet) Chain() string { return nt.chain.name }

// Clients returns the number of client endpoints.
func (nt *IPTablesNet) Clients() int { return nt.clients }

// NodeEnv is empty: the nodes dial each other directly.
func (nt *IPTablesNet) NodeEnv(int) []string { return nil }

// ClientDial is client endpoint c's client.Config.Dial: every connection leaves from
// workerIP(c).
func (nt *IPTablesNet) ClientDial(c int) func(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: workerIP(c)}}
	return func(ctx context.Context, addr string) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", addr)
	}
}

// Cut drops the packets of each directed link [from, to].
func (nt *IPTablesNet) Cut(links ...[2]int) error {
	return nt.change(func() {
		for _, l := range links {
			nt.cut[l] = true
		}
	})
}

// SetLoss drops each packet of every link with probability p (0: none).
func (nt *IPTablesNet) SetLoss(p float64) error {
	return nt.change(func() { nt.loss = p })
}

// Heal removes every cut and the loss.
func (nt *IPTablesNet) Heal() error {
	return nt.change(func() {
		clear(nt.cut)
		nt.loss = 0
	})
}

// Cuts returns the cut directed links as "a->b".
func (nt *IPTablesNet) Cuts() []string {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	n := len(nt.ports)
	var out []string
	for i := range n + nt.clients {
		for j := range n + nt.clients {
			if nt.cut[[2]int{i, j}] {
				out = append(out, endpointName(i, n)+"->"+endpointName(j, n))
			}
		}
	}
	return out
}

// Close removes the run's chain. Calling it again does nothing.
func (nt *IPTablesNet) Close() error {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	if nt.closed {
		return nil
	}
	nt.closed = true
	return nt.chain.remove()
}

// change applies f to the state and rewrites the chain.
func (nt *IPTablesNet) change(f func()) error {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	if nt.closed {
		return fmt.Errorf("jepsen: the iptables network is closed")
	}
	f()
	return nt.chain.set(nt.rulesLocked())
}

func (nt *IPTablesNet) apply() error {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	return nt.chain.set(nt.rulesLocked())
}

// rulesLocked renders the state as the chain's rules, by table.
func (nt *IPTablesNet) rulesLocked() map[string][]string {
	return iptablesRules(nt.ports, nt.clients, nt.cut, nt.loss)
}

// iptablesRules renders cuts and loss among nodes on ports and clients client endpoints
// as rules of the run's chain, by table, in a fixed order. It is a pure function.
func iptablesRules(ports [][]int, clients int, cut map[[2]int]bool, loss float64) map[string][]string {
	n := len(ports)
	p := func(i int) string {
		var s []string
		for _, port := range ports[i] {
			s = append(s, strconv.Itoa(port))
		}
		return strings.Join(s, ",")
	}
	var mangle, filter []string
	for i := range n {
		mangle = append(mangle, fmt.Sprintf("-m owner --uid-owner %d -m conntrack --ctstate NEW -j CONNMARK --set-mark %d",
			nodeUID(i), nodeUID(i)))
	}
	const drop, reject = "-j DROP", "-j REJECT --reject-with tcp-reset"
	for a := range n + clients {
		for b := range n + clients {
			if !cut[[2]int{a, b}] {
				continue
			}
			switch {
			case a < n && b < n:
				filter = append(filter,
					fmt.Sprintf("-p tcp -m connmark --mark %d -m multiport --dports %s %s", nodeUID(a), p(b), drop),
					fmt.Sprintf("-p tcp -m connmark --mark %d -m multiport --sports %s %s", nodeUID(b), p(a), drop))
			case a < n: // node → client
				// Resets pass: the ones REJECT makes for the worker's packets go out
				// through OUTPUT as the node's, and the worker must get them.
				w := workerIP(b - n)
				filter = append(filter,
					fmt.Sprintf("-p tcp -d %s -m multiport --sports %s ! --tcp-flags RST RST %s", w, p(a), drop),
					fmt.Sprintf("-p tcp -s %s -m multiport --dports %s --syn %s", w, p(a), reject))
			case b < n: // client → node
				filter = append(filter, fmt.Sprintf("-p tcp -s %s -m multiport --dports %s %s", workerIP(a-n), p(b), reject))
			}
		}
	}
	if loss > 0 {
		lose := fmt.Sprintf("-m statistic --mode random --probability %.4f %s", loss, drop)
		for j := range n {
			for a := range n {
				if a != j {
					filter = append(filter, fmt.Sprintf("-p tcp -m connmark --mark %d -m multiport --dports %s %s", nodeUID(a), p(j), lose),
						fmt.Sprintf("-p tcp -m connmark --mark %d -m multiport --sports %s %s", nodeUID(a), p(j), lose))
				}
			}
			if clients > 0 {
				filter = append(filter, fmt.Sprintf("-p tcp -s %s -m multiport --dports %s %s", workerNet, p(j), lose),
					fmt.Sprintf("-p tcp -d %s -m multiport --sports %s %s", workerNet, p(j), lose))
			}
		}
	}
	return map[string][]string{"mangle": mangle, "filter": filter}
}
