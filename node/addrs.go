package node

import (
	"fmt"
	"net"

	"github.com/lockstepdb/lockstep/internal/netaddr"
)

// Listen and advertise addresses (Config.RaftAddr and RaftAdvertise, ClientAddr and
// ClientAdvertise, AdminAddr and AdminAdvertise), as etcd and CockroachDB separate them:
// the listen address is what the node binds; the advertised one is what it tells others —
// the Raft configuration and the node's record in the log hold it, clients are sent to it
// (NotLeader, the members in a status), a joining node asks to be added at it. By default
// a node advertises what it binds, as it did before the two were separate, and so an
// address that binds every interface (0.0.0.0, ::) needs an advertised one.

// checkAddrs reports the first listen or advertise address the node could not use
// (wrapping ErrNodeConfig and netaddr.ErrAddress); c has its defaults.
func (c Config) checkAddrs() error {
	type pair struct{ kind, advertise, listen string }
	pairs := []pair{{"raft", c.RaftAdvertise, c.RaftAddr}, {"client", c.ClientAdvertise, c.ClientAddr}}
	if c.AdminAddr != "" {
		pairs = append(pairs, pair{"admin", c.AdminAdvertise, c.AdminAddr})
	} else if c.AdminAdvertise != "" {
		return fmt.Errorf("%w: an admin advertise address (%q) without an admin address to listen on", ErrNodeConfig, c.AdminAdvertise)
	}
	for _, p := range pairs {
		if err := netaddr.Check(p.kind, p.advertise, p.listen); err != nil {
			return fmt.Errorf("%w: %w", ErrNodeConfig, err)
		}
	}
	if c.ProbeAddr != "" {
		// Never advertised: 0.0.0.0 is fine, it is what a kubelet reaches.
		if _, _, err := net.SplitHostPort(c.ProbeAddr); err != nil {
			return fmt.Errorf("%w: probe address %q: want HOST:PORT: %w", ErrNodeConfig, c.ProbeAddr, err)
		}
	}
	return nil
}
