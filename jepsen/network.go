package jepsen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"time"
)

// Network faults come from one of two backends behind the Network interface:
//
//   - proxy (ProxyNet, net.go): every directed Raft link and every worker's path to a node
//     runs through a TCP proxy of the harness, which stalls, resets, delays or "loses" the
//     bytes of a cut link. No privilege needed.
//   - iptables (IPTablesNet, iptables.go): as root, every node runs as its own
//     unprivileged uid, nodes talk to each other directly, and a cut drops their packets
//     with rules in an iptables chain of the run's own (iptables_chain.go). Packet loss is
//     a random DROP; latency needs tc netem, which this backend does not use (netem.go).
//
// Endpoints are numbered nodes first (0 to n-1), then clients (n, n+1, ...).

// Backend names (Config.Net, ClusterConfig.Net, `lockstep jepsen run --net`).
const (
	NetAuto     = "auto"     // iptables when it can serve the run, else proxy
	NetProxy    = "proxy"    // ProxyNet
	NetIPTables = "iptables" // IPTablesNet
)

// ErrNetUnsupported is returned when the chosen network backend cannot make a fault the
// run asks for, or cannot run here at all.
var ErrNetUnsupported = errors.New("jepsen: network backend cannot do this")

// Network makes the network faults of a cluster: cuts between endpoints, packet loss, and
// a heal. Its methods are safe for concurrent use.
type Network interface {
	// Name is the backend's name: NetProxy or NetIPTables.
	Name() string
	// Clients returns the number of client endpoints; client endpoint c is n+c.
	Clients() int
	// Cut stops the bytes of each directed link [from, to] (one direction), all at once,
	// on top of the links cut already.
	Cut(links ...[2]int) error
	// SetLoss loses each packet (proxy: chunk) on every link with probability p; 0 turns
	// it off.
	SetLoss(p float64) error
	// Heal removes every cut, the loss and any latency.
	Heal() error
	// Cuts returns the cut directed links as "a->b" (nodes n1..., clients c0...).
	Cuts() []string
	// ClientDial is client endpoint c's client.Config.Dial.
	ClientDial(c int) func(ctx context.Context, addr string) (net.Conn, error)
	// NodeEnv is what node i's process needs in its environment (KEY=VALUE).
	NodeEnv(i int) []string
	// Close undoes everything the backend set up. Calling it again does nothing.
	Close() error
}

// Latency is the optional capability of a Network that can slow links down (ProxyNet).
type Latency interface {
	// SetDelay holds every chunk of every link for d (0: none).
	SetDelay(d time.Duration) error
	// SetLinkDelay holds every chunk from endpoint from to endpoint to for d more.
	SetLinkDelay(from, to int, d time.Duration) error
}

// latencyFaults are the faults that need the Latency capability.
var latencyFaults = []string{FaultDelay, FaultSlowLinks}

// endpointName is endpoint i's name among n nodes: n1, n2... for nodes, c0, c1... for
// clients.
func endpointName(i, n int) string {
	if i < n {
		return fmt.Sprintf("n%d", i+1)
	}
	return fmt.Sprintf("c%d", i-n)
}

// partitionCuts returns the directed links between nodes of different groups, both ways
// (nodes in no group keep their links).
func partitionCuts(groups [][]int) [][2]int {
	var out [][2]int
	for gi, g := range groups {
		for gj, h := range groups {
			if gi == gj {
				continue
			}
			for _, a := range g {
				for _, b := range h {
					out = append(out, [2]int{a, b})
				}
			}
		}
	}
	return out
}

// SelectNet resolves a backend name for a run whose nemesis makes faults: "" and
// NetAuto pick NetIPTables when the process is root, iptables works here and every fault
// is one it can make, else NetProxy. It returns the backend and why it was chosen, or an
// error wrapping ErrNetUnsupported when the named backend cannot serve the run.
func SelectNet(name string, faults []string) (backend, reason string, err error) {
	needLatency := ""
	for _, f := range faults {
		if slices.Contains(latencyFaults, f) {
			needLatency = f
		}
	}
	switch name {
	case NetProxy:
		return NetProxy, "asked for (--net proxy)", nil
	case NetIPTables:
		if needLatency != "" {
			return "", "", fmt.Errorf("%w: iptables cannot add latency (fault %s; tc netem: %s): use --net proxy",
				ErrNetUnsupported, needLatency, netemStatus())
		}
		if err := IPTablesUsable(); err != nil {
			return "", "", err
		}
		return NetIPTables, "asked for (--net iptables)", nil
	case "", NetAuto:
		if needLatency != "" {
			return NetProxy, fmt.Sprintf("auto: the nemesis adds latency (%s), which only the proxy makes (tc netem: %s)",
				needLatency, netemStatus()), nil
		}
		if err := IPTablesUsable(); err != nil {
			return NetProxy, "auto: " + err.Error(), nil
		}
		return NetIPTables, fmt.Sprintf("auto: root (euid %d) and iptables works", os.Geteuid()), nil
	}
	return "", "", fmt.Errorf("jepsen: unknown network backend %q: want %s, %s or %s", name, NetAuto, NetIPTables, NetProxy)
}
