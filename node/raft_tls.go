package node

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstepdb/lockstep/internal/certs"
)

// tlsStreamLayer is the Raft transport's stream layer of a secure node: mutual TLS 1.3
// where both ends hold a node certificate of the cluster's CA. A connection reaches
// hashicorp/raft (Accept) only after its handshake verified the peer's node certificate,
// so a message from anything else — plaintext, a client certificate, another CA — is
// never decoded by Raft. Handshakes run in their own goroutines, each bounded by
// Limits.HandshakeTimeout and capped by Limits.MaxHandshakes, so a slow peer does not hold up the others.
type tlsStreamLayer struct {
	ln      *limitListener
	timeout time.Duration // bounds a handshake
	st      *certs.Store
	log     *slog.Logger
	dial    func(addr string, timeout time.Duration) (net.Conn, error) // the TCP dial; nil: net.DialTimeout

	accepted chan net.Conn
	ctx      context.Context // ends at Close
	cancel   context.CancelFunc
	once     sync.Once
	wg       sync.WaitGroup
}

var _ raft.StreamLayer = (*tlsStreamLayer)(nil)

// errLayerClosed is returned by Accept once the layer is closed.
var errLayerClosed = errors.New("raft TLS layer closed")

// newTLSStreamLayer listens on addr and starts accepting. dial opens the TCP connections
// to peers (Config.Sequencer.Dial, for fault injection); nil dials the address.
// lim and m bound and count its connections (limits.go).
func newTLSStreamLayer(addr string, st *certs.Store, log *slog.Logger, dial func(string, time.Duration) (net.Conn, error),
	lim Limits, m *limitMetrics) (*tlsStreamLayer, error) {
	raw, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ln := newLimitListener(raw, "raft", lim, m)
	ctx, cancel := context.WithCancel(context.Background())
	l := &tlsStreamLayer{ln: ln, timeout: lim.HandshakeTimeout, st: st, log: log, dial: dial, accepted: make(chan net.Conn),
		ctx: ctx, cancel: cancel}
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

func (l *tlsStreamLayer) acceptLoop() {
	defer l.wg.Done()
	cfg := l.st.ServerConfig(certs.KindNode)
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			return
		}
		if !l.ln.startHandshake() {
			nc.Close()
			continue
		}
		l.wg.Add(1)
		go l.handshake(tls.Server(nc, cfg))
	}
}

// handshake verifies a peer and hands its connection to Raft, or closes it.
func (l *tlsStreamLayer) handshake(tc *tls.Conn) {
	defer l.wg.Done()
	defer l.ln.endHandshake()
	ctx, cancel := context.WithTimeout(l.ctx, l.timeout) // ends too when the layer closes
	err := tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			l.ln.refused(limitHandshake)
		}
		if l.ctx.Err() == nil {
			l.log.Warn("raft connection refused", "remote", tc.RemoteAddr().String(), "err", err)
		}
		tc.Close()
		return
	}
	select {
	case l.accepted <- &rawClose{Conn: tc, raw: tc.NetConn()}:
	case <-l.ctx.Done():
		tc.Close()
	}
}

// Accept returns the next connection whose peer holds a node certificate.
func (l *tlsStreamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.accepted:
		return c, nil
	case <-l.ctx.Done():
		return nil, errLayerClosed
	}
}

// Close stops accepting and waits for the handshakes in progress. Idempotent.
func (l *tlsStreamLayer) Close() error {
	var err error
	l.once.Do(func() {
		l.cancel()
		err = l.ln.Close()
		l.wg.Wait()
	})
	return err
}

// Addr is the listener's address.
func (l *tlsStreamLayer) Addr() net.Addr { return l.ln.Addr() }

// Dial connects to the node at address and verifies it holds a node certificate for
// that address's host.
func (l *tlsStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	dial := l.dial
	if dial == nil {
		dial = func(addr string, timeout time.Duration) (net.Conn, error) {
			return net.DialTimeout("tcp", addr, timeout)
		}
	}
	nc, err := dial(string(address), timeout)
	if err != nil {
		return nil, err
	}
	// The certificate must name the peer's address, wherever the TCP dial went (a fault
	// injection proxy).
	tc := tls.Client(nc, l.st.ClientConfig(string(address)))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return &rawClose{Conn: tc, raw: tc.NetConn()}, nil // see rawClose: a stalled peer must not block Close
}
