package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"
)

// ErrPeerRefused is why a handshake fails on this side: the peer's certificate does not
// chain to the CA, is not valid now, or is of a kind the listener does not accept.
var ErrPeerRefused = errors.New("certs: peer certificate refused")

// Store holds a node's or client's loaded certificates and hands out TLS configurations
// that read them at every handshake: after Reload, new connections use the new files.
// Safe for concurrent use.
type Store struct {
	load   func() (*Bundle, error)
	cur    atomic.Pointer[Bundle]
	caches tls.ClientSessionCache // TLS 1.3 session resumption for the connections it dials
}

// NewNodeStore loads dir's node certificate (LoadNode) into a Store.
func NewNodeStore(dir string) (*Store, error) {
	return newStore(func() (*Bundle, error) { return LoadNode(dir) })
}

// NewClientStore loads dir's certificate of client name (LoadClient) into a Store.
func NewClientStore(dir, name string) (*Store, error) {
	return newStore(func() (*Bundle, error) { return LoadClient(dir, name) })
}

func newStore(load func() (*Bundle, error)) (*Store, error) {
	s := &Store{load: load, caches: tls.NewLRUClientSessionCache(256)}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload reads the files again. If they fail to load or check, it returns why and the
// Store keeps serving the certificates it had.
func (s *Store) Reload() error {
	b, err := s.load()
	if err != nil {
		return err
	}
	s.cur.Store(b)
	return nil
}

// Bundle returns the certificates in use.
func (s *Store) Bundle() *Bundle { return s.cur.Load() }

// ServerConfig returns a TLS 1.3 server configuration that requires a client certificate
// chaining to the CA, valid now, and of a kind in accept (KindNode, KindClient).
func (s *Store) ServerConfig(accept ...Kind) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return &s.cur.Load().Cert, nil
		},
		// The chain is verified in VerifyConnection against the CA loaded now, so a
		// reloaded CA applies; RequireAnyClientCert makes the handshake fail without one.
		ClientAuth: tls.RequireAnyClientCert,
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, err := s.verify(cs.PeerCertificates, "", x509.ExtKeyUsageClientAuth, accept)
			return err
		},
	}
}

// ClientConfig returns a TLS 1.3 configuration for dialing a node at addr: it presents
// the Store's certificate and accepts only a node certificate of the CA that names addr's
// host.
func (s *Store) ClientConfig(addr string) *tls.Config {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		ServerName: host,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &s.cur.Load().Cert, nil
		},
		ClientSessionCache: s.caches,
		// Verified in VerifyConnection, against the CA loaded now (see ServerConfig).
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, err := s.verify(cs.PeerCertificates, host, x509.ExtKeyUsageServerAuth, []Kind{KindNode})
			return err
		},
	}
}

// verify checks a peer's chain against the current CA at the current time: for a server,
// that it names host; and that its kind is one of accept.
func (s *Store) verify(chain []*x509.Certificate, host string, usage x509.ExtKeyUsage, accept []Kind) (Peer, error) {
	if len(chain) == 0 {
		return Peer{}, fmt.Errorf("%w: the peer presented no certificate", ErrPeerRefused)
	}
	leaf, now := chain[0], time.Now()
	who := fmt.Sprintf("certificate %q", leaf.Subject.CommonName)
	if err := checkValid(who, leaf, now); err != nil {
		return Peer{}, fmt.Errorf("%w: %w", ErrPeerRefused, err)
	}
	opts := x509.VerifyOptions{Roots: s.cur.Load().CA, CurrentTime: now, DNSName: host,
		Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{usage}}
	for _, c := range chain[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(opts); err != nil {
		return Peer{}, fmt.Errorf("%w: %s: %w", ErrPeerRefused, who, err)
	}
	p := Peer{Name: leaf.Subject.CommonName, Kind: KindOf(leaf)}
	for _, k := range accept {
		if p.Kind == k {
			return p, nil
		}
	}
	return Peer{}, fmt.Errorf("%w: %s is a %s certificate; this port accepts %v", ErrPeerRefused, who, p.Kind, accept)
}

// Peer is the verified identity at the other end of a TLS connection.
type Peer struct {
	// Name is the certificate's common name: the client's identity, or NodeCommonName.
	Name string
	// Kind says whether the peer holds a node or a client certificate; KindNone on an
	// insecure connection.
	Kind Kind
}

// PeerOf returns the identity of a connection's peer whose certificate a Store's
// configuration verified (the handshake is complete); the zero Peer if there is none.
func PeerOf(cs tls.ConnectionState) Peer {
	if !cs.HandshakeComplete || len(cs.PeerCertificates) == 0 {
		return Peer{}
	}
	leaf := cs.PeerCertificates[0]
	return Peer{Name: leaf.Subject.CommonName, Kind: KindOf(leaf)}
}

// LibraryConfig returns a TLS 1.3 configuration for the client library, which clones it
// per connection and sets ServerName to the host it dials: the standard verification
// against the CA loaded now checks the node's chain and host, and VerifyConnection that
// it holds a node certificate. The certificate presented is the Store's current one, so
// a Reload renews it; the CA is the one loaded when LibraryConfig was called.
func (s *Store) LibraryConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		RootCAs:    s.cur.Load().CA,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &s.cur.Load().Cert, nil
		},
		ClientSessionCache: s.caches,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("%w: the node presented no certificate", ErrPeerRefused)
			}
			if k := KindOf(cs.PeerCertificates[0]); k != KindNode {
				return fmt.Errorf("%w: the server presented a %s certificate, not a node's", ErrPeerRefused, k)
			}
			return nil
		},
	}
}
