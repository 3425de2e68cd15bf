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
	"github.com/lockstepdb/lockstep/internal/netaddr"
	"github.com/lockstepdb/lockstep/internal/ratelog"
)

// tlsStreamLayer is the Raft transport's stream layer of a secure node: mutual TLS 1.3
// where both ends hold a node certificate of the cluster's CA. A connection reaches
// hashicorp/raft (Accept) only after its handshake verified the peer's node certificate,
// so a message from anything else — plaintext, a client certificate, another CA — is
// never decoded by Raft. Handshakes run in their own goroutines, each bounded by
// Limits.HandshakeTimeout and, from the connection's first byte on (Limits.FirstByteTimeout),
// holding a handshake place (Limits.MaxHandshakes, MaxHandshakesPerAddr; members' hosts
// have places kept for them: SetPeers), so a slow or silent peer does not hold up the
// others.
type tlsStreamLayer struct {
	ln        *limitListener
	advertise net.Addr      // the address peers dial (Config.RaftAdvertise resolved): Addr
	timeout   time.Duration // bounds a handshake
	firstByte time.Duration // bounds the wait for a connection's first byte
	st        *certs.Store
	log       *ratelog.Limiter                                           // "raft connection refused", at a bounded rate
	dial      func(addr string, timeout time.Duration) (net.Conn, error) // the TCP dial; nil: net.DialTimeout

	accepted chan net.Conn
	ctx      context.Context // ends at Close
	cancel   context.CancelFunc
	once     sync.Once
	wg       sync.WaitGroup
}

var _ raft.StreamLayer = (*tlsStreamLayer)(nil)

// errLayerClosed is returned by Accept once the layer is closed.
var errLayerClosed = errors.New("raft TLS layer closed")

// newTLSStreamLayer listens on addr and starts accepting; it advertises advertise
// (internal/netaddr.Resolve: "" advertises the bound address). dial opens the TCP connections
// to peers (Config.Sequencer.Dial, for fault injection); nil dials the address.
// lim and m bound and count its connections (limits.go).
func newTLSStreamLayer(addr, advertise string, st *certs.Store, log *slog.Logger, dial func(string, time.Duration) (net.Conn, error),
	lim Limits, m *limitMetrics) (*tlsStreamLayer, error) {
	raw, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	adv, err := netaddr.Resolve(advertise, raw.Addr())
	if err != nil {
		raw.Close()
		return nil, err
	}
	ln := newLimitListener(raw, "raft", lim, m)
	ln.evict = true // silent.go
	ctx, cancel := context.WithCancel(context.Background())
	l := &tlsStreamLayer{ln: ln, advertise: netaddr.Addr(adv), timeout: lim.HandshakeTimeout, firstByte: lim.FirstByteTimeout, st: st,
		log: ratelog.New(log, slog.LevelWarn, "raft connection refused", ratelog.Config{}), dial: dial,
		accepted: make(chan net.Conn), ctx: ctx, cancel: cancel}
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
		l.wg.Add(1)
		go l.handshake(nc, cfg)
	}
}

// handshake waits for the connection's first byte, then verifies the peer within a
// handshake place and hands its connection to Raft; or closes it.
func (l *tlsStreamLayer) handshake(nc net.Conn, cfg *tls.Config) {
	defer l.wg.Done()
	ctx, cancel := context.WithTimeout(l.ctx, l.timeout) // ends too when the layer closes
	defer cancel()
	pc, err := l.ln.awaitFirstByte(ctx, nc, l.firstByte)
	if err != nil {
		nc.Close()
		return
	}
	host := remoteHost(nc)
	if !l.ln.startHandshake(host) {
		nc.Close()
		return
	}
	tc := tls.Server(pc, cfg)
	err = tc.HandshakeContext(ctx)
	l.ln.endHandshake(host)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			l.ln.refused(limitHandshake)
		}
		if l.ctx.Err() == nil {
			l.log.Log("remote", nc.RemoteAddr().String(), "err", err)
		}
		nc.Close()
		return
	}
	select {
	case l.accepted <- &rawClose{Conn: tc, raw: nc}:
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
		l.log.Stop()
	})
	return err
}

// SetPeers makes isPeer decide which remote hosts are the members' (exempt from the
// per-address caps, with handshake places kept for them); nil: none is.
func (l *tlsStreamLayer) SetPeers(isPeer func(host string) bool) {
	if isPeer == nil {
		l.ln.peer.Store(nil)
		return
	}
	l.ln.peer.Store(&isPeer)
}

// Addr is the advertised address: hashicorp/raft puts it into the Raft configuration.
func (l *tlsStreamLayer) Addr() net.Addr { return l.advertise }

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

// isMemberHost reports whether host is the host of a member's Raft address in the
// latest configuration this node knows: the Raft port keeps handshake places for them
// and exempts them from its per-address caps (Limits).
func (n *Node) isMemberHost(host string) bool {
	members, err := n.seq.Members()
	if err != nil {
		return false
	}
	for _, m := range members {
		if h, _, err := net.SplitHostPort(m.Addr); err == nil && h == host {
			return true
		}
	}
	return false
}
