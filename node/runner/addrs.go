package runner

import (
	"errors"
	"fmt"

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

// listenAddrs returns the listen addresses of raft, client and admin, from --KIND-listen
// or else --KIND (its default when neither is given).
func listenAddrs(c *cli.Context) ([3]string, error) {
	var out [3]string
	for i, kind := range []string{"raft", "client", "admin"} {
		listen := kind + "-listen"
		switch {
		case c.IsSet(listen) && c.IsSet(kind):
			return out, fmt.Errorf("%w: --%s and --%s both name the %s listen address (--%s is its older name): give one of them",
				ErrAddrFlags, kind, listen, kind, kind)
		case c.IsSet(listen):
			out[i] = c.String(listen)
		default:
			out[i] = c.String(kind)
		}
	}
	return out, nil
}
