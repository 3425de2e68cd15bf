package runner

import (
	"errors"
	"fmt"

	"github.com/lockstepdb/lockstep/node"
	"github.com/urfave/cli/v2"
)

// ErrAddrFlags is wrapped by the error of a flag that names a listen address twice.
var ErrAddrFlags = errors.New("address flags")

// The address flags, as etcd's and CockroachDB's: --KIND-listen is what the node binds,
// --KIND-advertise what it tells others (node.Config, "Listen and advertise addresses").
// --raft, --client and --admin, the flags from before the split, stay as the older names
// of the --KIND-listen flags, with their defaults; the advertised address defaults to the
// listen address, so a node started with the old flags alone behaves as it did. Giving
// both names of one listen address is an error rather than a silent choice.

// setAddrs sets cfg's listen addresses of raft, client and admin from --KIND-listen, or
// else --KIND (its default when neither is given), its advertised ones from
// --KIND-advertise, and its probe address.
func setAddrs(c *cli.Context, cfg *node.Config) error {
	for _, a := range []struct {
		kind              string
		listen, advertise *string
	}{
		{"raft", &cfg.RaftAddr, &cfg.RaftAdvertise},
		{"client", &cfg.ClientAddr, &cfg.ClientAdvertise},
		{"admin", &cfg.AdminAddr, &cfg.AdminAdvertise},
	} {
		listen := a.kind + "-listen"
		switch {
		case c.IsSet(listen) && c.IsSet(a.kind):
			return fmt.Errorf("%w: --%s and --%s both name the %s listen address (--%s is its older name): give one of them",
				ErrAddrFlags, a.kind, listen, a.kind, a.kind)
		case c.IsSet(listen):
			*a.listen = c.String(listen)
		default:
			*a.listen = c.String(a.kind)
		}
		*a.advertise = c.String(a.kind + "-advertise")
	}
	cfg.ProbeAddr = c.String("probe-addr")
	return nil
}
