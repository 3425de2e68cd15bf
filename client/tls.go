package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/lockstepdb/lockstep/internal/certs"
)

// ErrTLS is the cause reported when a TLS handshake with a node failed for a reason no
// retry cures: the node refused this client's certificate (another CA, expired, not yet
// valid), this client refused the node's (the address is not among its hosts, another
// CA), or the address does not speak TLS (a node started with --insecure). Definite,
// like ErrClusterMismatch: Dial, Status, Invoke and the admin calls return it at once.
var ErrTLS = errors.New("TLS refused")

// LoadTLS returns the TLS configuration of client name from the certificates directory
// dir (ca.crt, client.NAME.crt, client.NAME.key; see `lockstep cert`). It checks the
// files as a node would: an expired, not yet valid, mismatched or missing file is an
// error naming it. The configuration accepts only nodes with a node certificate of the
// same CA that names the host dialed.
func LoadTLS(dir, name string) (*tls.Config, error) {
	st, err := certs.NewClientStore(dir, name)
	if err != nil {
		return nil, err
	}
	return st.LibraryConfig(), nil
}

// tlsHandshake runs the TLS handshake on nc within ctx and returns the TLS connection.
// The wire handshake follows on it: in TLS 1.3 the node's verdict on this client's
// certificate arrives with the node's first bytes, which the wire handshake reads, and
// which wrapTLSErr then recognises.
func tlsHandshake(ctx context.Context, nc net.Conn, base *tls.Config, addr string) (net.Conn, error) {
	cfg := base.Clone()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, wrapTLSErr(err)
	}
	return &tlsConn{tc}, nil
}

// tlsConn is a TLS connection whose read errors say when the node refused the client
// certificate, and whose Close closes the TCP connection at once: tls.Conn.Close sends a
// close_notify alert, which waits for any write in progress, and a write to a node that
// stopped reading (paused, frozen) never ends — Close must not hang with it. The protocol
// frames every message, so nothing relies on close_notify.
type tlsConn struct{ *tls.Conn }

func (c *tlsConn) Close() error { return c.Conn.NetConn().Close() }

func (c *tlsConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		err = wrapTLSErr(err)
	}
	return n, err
}

// wrapTLSErr marks err with ErrTLS if it is a definite refusal: a TLS alert from the node,
// a certificate this side refused, or an answer that is not TLS.
func wrapTLSErr(err error) error {
	var oe *net.OpError
	var rh tls.RecordHeaderError
	var ve *tls.CertificateVerificationError
	switch {
	case errors.As(err, &oe) && oe.Op == "remote error":
		return fmt.Errorf("%w: the node refused this client's certificate: %w", ErrTLS, err)
	case errors.As(err, &rh):
		return fmt.Errorf("%w: the address does not speak TLS (a node started with --insecure?): %w", ErrTLS, err)
	case errors.As(err, &ve), errors.Is(err, certs.ErrPeerRefused):
		return fmt.Errorf("%w: %w", ErrTLS, err)
	}
	return err
}
