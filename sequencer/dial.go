package sequencer

import (
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// dialLayer is a raft.StreamLayer listening on a TCP address and dialing peers with an
// injected function (Config.Dial), so a harness can route each outbound link elsewhere.
type dialLayer struct {
	net.Listener
	dial func(addr string, timeout time.Duration) (net.Conn, error)
}

// Dial opens a connection to a peer's Raft address through the injected dialer.
func (l *dialLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return l.dial(string(addr), timeout)
}

// newDialTransport is raft.NewTCPTransportWithConfig with the outbound dials going
// through dial. The listener's address is the advertised one, so bind must be dialable.
func newDialTransport(bind string, dial func(string, time.Duration) (net.Conn, error), cfg *raft.NetworkTransportConfig) (*raft.NetworkTransport, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	cfg.Stream = &dialLayer{Listener: ln, dial: dial}
	return raft.NewNetworkTransportWithConfig(cfg), nil
}
