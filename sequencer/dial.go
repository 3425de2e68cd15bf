package sequencer

import (
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// dialLayer is a raft.StreamLayer listening on a TCP address and dialing peers with an
// injected function (Config.Dial), so a harness can route each outbound link elsewhere.
// Open builds the default transport over it when Config.Dial is set; the listener's
// address is the advertised one, so RaftAddr must be dialable.
type dialLayer struct {
	net.Listener
	dial func(addr string, timeout time.Duration) (net.Conn, error)
}

// Dial opens a connection to a peer's Raft address through the injected dialer.
func (l *dialLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return l.dial(string(addr), timeout)
}
