// Package netaddr separates the address a listener binds from the address it advertises,
// as etcd's --listen-*/--advertise-* and CockroachDB's --listen-addr/--advertise-addr do:
// a node may bind 0.0.0.0:7001 (every interface, in a container) and tell its peers and
// clients to dial n1.internal:7001.
//
//  1. Check validates an advertise address before anything binds: a host other machines
//     can dial (a DNS name or a specific IP, never 0.0.0.0 or ::), and an optional port.
//  2. Resolve turns the advertise setting and the bound listener's address into the
//     address to advertise: the bound address itself when nothing is advertised (so
//     port 0 reports the port the OS chose), and the bound port when the advertise
//     address names only a host.
//  3. Addr is a net.Addr whose String is the advertised address, for a Raft stream layer:
//     hashicorp/raft puts its Addr().String() into the cluster configuration.
//
// Usage:
//
//	if err := netaddr.Check("client", cfg.ClientAdvertise, cfg.ClientAddr); err != nil { ... }
//	ln, _ := net.Listen("tcp", cfg.ClientAddr)
//	adv, _ := netaddr.Resolve(cfg.ClientAdvertise, ln.Addr())
//
// Contract: Check before Resolve; Resolve of a checked setting never fails for a TCP
// listener's address.
package netaddr
