package runner

import (
	"fmt"
	"io"

	"github.com/lockstepdb/lockstep/internal/netaddr"
)

// printChecked prints what --check-config found: that the configuration is valid, and
// the addresses the node would listen on and advertise (port 0: the one the OS picks).
func printChecked(w io.Writer, cfg Config) {
	n := cfg.Node
	or := func(advertise, listen string) string {
		a, err := netaddr.Resolve(advertise, netaddr.Addr(listen)) // HOST alone: the listen port
		if err != nil {
			return advertise // checked already: not reached
		}
		return a
	}
	fmt.Fprintf(w, "configuration valid: node %s, data %s\n", n.ID, n.DataDir)
	fmt.Fprintf(w, "raft    listen %s advertise %s\n", n.RaftAddr, or(n.RaftAdvertise, n.RaftAddr))
	fmt.Fprintf(w, "client  listen %s advertise %s\n", n.ClientAddr, or(n.ClientAdvertise, n.ClientAddr))
	if n.AdminAddr != "" {
		fmt.Fprintf(w, "admin   listen %s advertise %s\n", n.AdminAddr, or(n.AdminAdvertise, n.AdminAddr))
	}
	if n.ProbeAddr != "" {
		fmt.Fprintf(w, "probe   listen %s (plain HTTP: /healthz, /readyz)\n", n.ProbeAddr)
	}
}
