package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/wire"
)

// reachTimeout bounds each probe of a joining node's addresses.
const reachTimeout = 5 * time.Second

// ErrJoinUnreachable is why a join is refused when the joining node's Raft or client
// address does not answer as a node of this cluster: nothing listens there, the TLS
// handshake fails (no node certificate of the cluster's CA for that host), or another
// node answers. Adding such a voter would cost the cluster a vote it can never get.
var ErrJoinUnreachable = errors.New("join refused: the joining node does not answer")

// checkReachable probes a joining node before it is added: its Raft address must accept a
// connection — on a secure node, a mutual-TLS handshake in which it proves a node
// certificate of the cluster's CA for that host — and its client address must answer a
// status request as the node id that asks to join. The error is a BadArguments *wire.Error
// naming the address and why, so the asker gets it at once and no retry repeats it. It
// returns the status the node answered with.
func (n *Node) checkReachable(ctx context.Context, id, raftAddr, clientAddr string) (client.Status, error) {
	refuse := func(what, addr string, err error) error {
		return &wire.Error{Code: wire.CodeBadArguments, Message: fmt.Sprintf(
			"%v: node %s's %s address %s: %v", ErrJoinUnreachable, id, what, addr, err)}
	}
	ctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	if err := n.probeRaft(ctx, raftAddr); err != nil {
		return client.Status{}, refuse("raft", raftAddr, err)
	}
	st, err := n.peers.Status(ctx, clientAddr)
	if err != nil {
		return client.Status{}, refuse("client", clientAddr, err)
	}
	if st.NodeID != id {
		return client.Status{}, refuse("client", clientAddr, fmt.Errorf("node %q answers there", st.NodeID))
	}
	return st, nil
}

// probeRaft connects to a Raft address; on a secure node it completes the TLS handshake
// as Raft peers do, verifying the node certificate, then hangs up.
func (n *Node) probeRaft(ctx context.Context, addr string) error {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	if n.certs == nil {
		return nil
	}
	tc := tls.Client(nc, n.certs.ClientConfig(addr))
	if err := tc.HandshakeContext(ctx); err != nil {
		return err
	}
	// In TLS 1.3 the server judges this node's certificate after the client's handshake
	// is done; the verdict (an alert, or nothing) arrives on the first read. The Raft
	// layer sends nothing unasked, so a read that times out means the peer accepted.
	tc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var b [1]byte
	if _, err := tc.Read(b[:]); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		return err
	}
	return nil
}
