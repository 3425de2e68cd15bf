package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/certs"
	"github.com/lockstepdb/lockstep/internal/wire"
)

// Security of a node (docs/security.md). A secure node (Config.CertsDir) speaks mutual
// TLS 1.3 on its three ports: Raft accepts only node certificates of the cluster's CA
// (raft_tls.go), the client port and the admin port node or client certificates of the
// CA. An insecure node (Config.Insecure) speaks plaintext to anyone and says so in its
// status.

// ErrNoCertificates is returned by Config.Validate when neither CertsDir nor Insecure is
// set: a node never runs without TLS by accident.
var ErrNoCertificates = fmt.Errorf("%w: no certificates: give a certificates directory (--certs-dir; see `lockstep cert`) or, for development only, --insecure", ErrNodeConfig)

// Identity is who is at the other end of a client connection, as its verified
// certificate says: what roles will be checked against.
type Identity struct {
	// Name is the certificate's common name: the client's name, or certs.NodeCommonName
	// for a node calling its peers. Empty on an insecure node.
	Name string
	// Kind is certs.KindNode for a node certificate, certs.KindClient for a client's,
	// certs.KindNone on an insecure node.
	Kind certs.Kind
}

// loadCerts loads the node's certificates unless it runs insecure.
func (n *Node) loadCerts() error {
	if n.cfg.Insecure {
		n.log.Warn("INSECURE MODE: no TLS and no authentication on any port; anyone who can reach them owns the cluster. For development only.")
		return nil
	}
	st, err := certs.NewNodeStore(n.cfg.CertsDir)
	if err != nil {
		return fmt.Errorf("node certificates: %w", err)
	}
	n.certs = st
	n.clientTLS = st.ServerConfig(certs.KindClient, certs.KindNode)
	return nil
}

// Insecure reports whether the node runs without TLS.
func (n *Node) Insecure() bool { return n.certs == nil }

// ReloadCerts reads the node's certificate files again (on SIGHUP): new connections on
// every port use them, connections already open go on. If the files do not load, it
// returns why and the node keeps its current certificates. A no-op on an insecure node.
func (n *Node) ReloadCerts() error {
	if n.certs == nil {
		return nil
	}
	if err := n.certs.Reload(); err != nil {
		return err
	}
	leaf := n.certs.Bundle().Cert.Leaf
	n.log.Info("certificates reloaded", "not_after", leaf.NotAfter, "serial", leaf.SerialNumber.String())
	return nil
}

// peerClientConfig returns the client-library settings of the node's own calls to its
// peers (hash checks, joins): its node certificate, or plaintext on an insecure node.
func (n *Node) peerClientConfig(cfg client.Config) client.Config {
	if n.certs == nil {
		cfg.Insecure = true
	} else {
		cfg.TLS = n.certs.LibraryConfig()
	}
	return cfg
}

// acceptTLS runs the TLS handshake of a client-port connection within ctx, which has a
// deadline, and returns the connection to speak the protocol on and the peer's identity.
// pc's first byte has arrived (awaitFirstByte). On a secure node a peer without a
// certificate of the CA fails here, before any frame is read.
func (n *Node) acceptTLS(ctx context.Context, pc *prefixConn) (net.Conn, Identity, error) {
	if n.certs == nil {
		return pc, Identity{}, nil
	}
	// A TLS connection starts with a handshake record (type 22). Anything else is most
	// likely a plaintext Lockstep client (--insecure): it gets a definite refusal in its
	// own protocol, so that it stops at once and says why, and nothing else.
	nc := pc.Conn
	if pc.first[0] != recordTypeHandshake {
		resp := wire.ErrorResponse(0, &wire.Error{Code: wire.CodeProtocolVersion, Message: errPlaintext})
		nc.SetWriteDeadline(time.Now().Add(time.Second))
		nc.Write(wire.AppendFrame(nil, wire.AppendResponse(nil, &resp)))
		return nil, Identity{}, fmt.Errorf("plaintext connection refused")
	}
	tc := tls.Server(pc, n.clientTLS)
	if err := tc.HandshakeContext(ctx); err != nil {
		if n.ctx.Err() == nil {
			n.refusals.client.Log("remote", nc.RemoteAddr().String(), "err", err)
			host, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
			n.recordEvent(EventRefused, fmt.Sprintf("client TLS handshake from %s failed: %v", host, err))
		}
		return nil, Identity{}, err
	}
	p := certs.PeerOf(tc.ConnectionState())
	return &rawClose{Conn: tc, raw: nc}, Identity{Name: p.Name, Kind: p.Kind}, nil
}

// rawClose is a TLS connection whose Close closes the TCP connection at once, without the
// close_notify alert of tls.Conn.Close: that alert waits for the lock of any write in
// progress, and a write to a peer that does not read never ends, so closing the
// connection of a client that does not read its answers — what the node does to it, from
// the goroutine that answers every client — would block (DESIGN.md invariant 7). The
// protocol frames every message, so nothing relies on close_notify.
type rawClose struct {
	net.Conn
	raw net.Conn
}

func (c *rawClose) Close() error { return c.raw.Close() }

// recordTypeHandshake is the first byte of every TLS connection: a handshake record.
const recordTypeHandshake = 22

// errPlaintext is what a secure node answers a plaintext client.
const errPlaintext = "this node requires TLS: connect with certificates (--certs-dir), not --insecure"

// prefixConn is a connection whose first bytes were read already: Read returns them first.
type prefixConn struct {
	net.Conn
	first []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.first) > 0 {
		n := copy(p, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
