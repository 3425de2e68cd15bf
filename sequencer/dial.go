package sequencer

import (
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// dialLayer is a raft.StreamLayer listening on a TCP address and dialing peers with an
// injected function (Config.Dial), so a harness can route each outbound link elsewhere.
// Open builds the default transport over it when Config.Dial or Config.RaftAdvertise is
// set; it advertises advertise (the listener's address, or RaftAdvertise resolved).
type dialLayer struct {
	net.Listener
	dial      func(addr string, timeout time.Duration) (net.Conn, error) // nil: net.DialTimeout
	advertise net.Addr
}

// Addr is the advertised address (the listener's if none is set): hashicorp/raft puts it
// into the configuration.
func (l *dialLayer) Addr() net.Addr {
	if l.advertise == nil {
		return l.Listener.Addr()
	}
	return l.advertise
}

// Dial opens a connection to a peer's Raft address through the injected dialer.
func (l *dialLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	if l.dial == nil {
		return net.DialTimeout("tcp", string(addr), timeout)
	}
	return l.dial(string(addr), timeout)
}
