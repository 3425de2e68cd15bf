package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/certs"
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

// acceptTLS runs the TLS handshake of a client-port connection and returns the
// connection to speak the protocol on and the peer's identity. On a secure node a peer
// without a certificate of the CA fails here, before any frame is read.
func (n *Node) acceptTLS(nc net.Conn) (net.Conn, Identity, error) {
	if n.certs == nil {
		return nc, Identity{}, nil
	}
	tc := tls.Server(nc, n.clientTLS)
	ctx, cancel := context.WithTimeout(n.ctx, handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		if n.ctx.Err() == nil {
			n.log.Warn("client connection refused", "remote", nc.RemoteAddr().String(), "err", err)
		}
		return nil, Identity{}, err
	}
	p := certs.PeerOf(tc.ConnectionState())
	return tc, Identity{Name: p.Name, Kind: p.Kind}, nil
}
