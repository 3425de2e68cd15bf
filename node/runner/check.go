package runner

import (
	"fmt"
	"io"
)

// printChecked prints what --check-config found: that the configuration is valid, and
// the addresses the node would listen on and advertise ("" advertise: the bound address).
func printChecked(w io.Writer, cfg Config) {
	n := cfg.Node
	or := func(advertise, listen string) string {
		if advertise == "" {
			return listen
		}
		return advertise
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
