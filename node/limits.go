package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// Limits bound what connections may cost a node, on every listener (client, Raft, admin).
// Zero fields take the defaults of DefaultLimits; docs/operations.md gives the memory
// bound they imply.
type Limits struct {
	// MaxConns is the most connections one listener holds open; one more is closed at
	// once. Default 1024.
	MaxConns int
	// MaxConnsPerAddr is the most connections one listener holds from one remote IP
	// address. Default 256.
	MaxConnsPerAddr int
	// MaxHandshakes is the most handshakes (TLS and protocol) one listener runs at once;
	// a connection arriving past it is closed. Default 64.
	MaxHandshakes int
	// HandshakeTimeout bounds a connection's TLS and protocol handshakes together.
	// Default 10s.
	HandshakeTimeout time.Duration
	// IdleTimeout closes a client connection that sent nothing for this long while it has
	// no request in flight and no subscription. Default 5m.
	IdleTimeout time.Duration
	// MaxFrameBytes is the largest request frame a client connection may send: the
	// per-connection bound on request bytes being received. Default wire.DefaultMaxFrameBytes.
	MaxFrameBytes int
	// InflightBytes is the node-wide budget of request frame bytes being received
	// beyond each frame's first 64 KiB; a frame that needs more closes its connection.
	// Default 64 MiB.
	InflightBytes int64
	// AdminReadTimeout, AdminWriteTimeout and AdminIdleTimeout are the admin HTTP
	// server's read (whole request), write (whole response) and keep-alive idle timeouts.
	// Defaults 10s, 30s, 60s.
	AdminReadTimeout, AdminWriteTimeout, AdminIdleTimeout time.Duration
	// AdminMaxHeaderBytes bounds an admin HTTP request's header. Default 16 KiB.
	AdminMaxHeaderBytes int
}

// DefaultLimits returns the default Limits.
func DefaultLimits() Limits {
	return Limits{
		MaxConns:            1024,
		MaxConnsPerAddr:     256,
		MaxHandshakes:       64,
		HandshakeTimeout:    10 * time.Second,
		IdleTimeout:         5 * time.Minute,
		MaxFrameBytes:       wire.DefaultMaxFrameBytes,
		InflightBytes:       64 << 20,
		AdminReadTimeout:    10 * time.Second,
		AdminWriteTimeout:   30 * time.Second,
		AdminIdleTimeout:    time.Minute,
		AdminMaxHeaderBytes: 16 << 10,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	l.MaxConns = cmp.Or(l.MaxConns, d.MaxConns)
	l.MaxConnsPerAddr = cmp.Or(l.MaxConnsPerAddr, d.MaxConnsPerAddr)
	l.MaxHandshakes = cmp.Or(l.MaxHandshakes, d.MaxHandshakes)
	l.HandshakeTimeout = cmp.Or(l.HandshakeTimeout, d.HandshakeTimeout)
	l.IdleTimeout = cmp.Or(l.IdleTimeout, d.IdleTimeout)
	l.MaxFrameBytes = cmp.Or(l.MaxFrameBytes, d.MaxFrameBytes)
	l.InflightBytes = cmp.Or(l.InflightBytes, d.InflightBytes)
	l.AdminReadTimeout = cmp.Or(l.AdminReadTimeout, d.AdminReadTimeout)
	l.AdminWriteTimeout = cmp.Or(l.AdminWriteTimeout, d.AdminWriteTimeout)
	l.AdminIdleTimeout = cmp.Or(l.AdminIdleTimeout, d.AdminIdleTimeout)
	l.AdminMaxHeaderBytes = cmp.Or(l.AdminMaxHeaderBytes, d.AdminMaxHeaderBytes)
	return l
}

// validate reports the first invalid limit (after defaults).
func (l Limits) validate() error {
	switch {
	case l.MaxConns < 1 || l.MaxConnsPerAddr < 1 || l.MaxHandshakes < 1:
		return fmt.Errorf("%w: connection limits must be positive", ErrNodeConfig)
	case l.HandshakeTimeout < 0 || l.IdleTimeout < 0 || l.AdminReadTimeout < 0 || l.AdminWriteTimeout < 0 || l.AdminIdleTimeout < 0:
		return fmt.Errorf("%w: timeouts must be positive", ErrNodeConfig)
	case l.MaxFrameBytes < 1 || l.MaxFrameBytes > wire.DefaultMaxFrameBytes:
		return fmt.Errorf("%w: max frame bytes %d out of [1, %d]", ErrNodeConfig, l.MaxFrameBytes, wire.DefaultMaxFrameBytes)
	case l.InflightBytes < 1 || l.AdminMaxHeaderBytes < 1:
		return fmt.Errorf("%w: in-flight bytes and admin header bytes must be positive", ErrNodeConfig)
	}
	return nil
}

// Reasons a connection is refused or closed by a limit: the "reason" label of
// lockstep_conn_limited_total.
const (
	limitConns      = "max_conns"
	limitConnsAddr  = "max_conns_per_addr"
	limitHandshakes = "max_handshakes"
	limitHandshake  = "handshake_timeout"
	limitIdle       = "idle_timeout"
	limitBudget     = "inflight_bytes"
)

// limitMetrics count connections refused or closed by a limit, by listener and reason,
// and the connections each listener holds.
type limitMetrics struct {
	limited *prometheus.CounterVec
	open    *prometheus.GaugeVec
}

func newLimitMetrics(reg *prometheus.Registry) *limitMetrics {
	m := &limitMetrics{
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_conn_limited_total",
			Help: "Connections refused or closed by a resource limit, by listener (client, raft, admin) and reason.",
		}, []string{"listener", "reason"}),
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "lockstep_conns_open", Help: "Connections a listener holds open.",
		}, []string{"listener"}),
	}
	reg.MustRegister(m.limited, m.open)
	return m
}

// limitListener enforces MaxConns, MaxConnsPerAddr and MaxHandshakes on one listener.
// Accept returns only connections within the caps; the others are closed at once and
// counted. A returned connection frees its place when closed.
type limitListener struct {
	net.Listener
	name string
	lim  Limits
	m    *limitMetrics
	hs   chan struct{} // one slot per handshake in progress

	mu     sync.Mutex
	total  int
	byAddr map[string]int
}

func newLimitListener(ln net.Listener, name string, lim Limits, m *limitMetrics) *limitListener {
	return &limitListener{Listener: ln, name: name, lim: lim, m: m,
		hs: make(chan struct{}, lim.MaxHandshakes), byAddr: make(map[string]int)}
}

// refused counts one connection refused or closed for reason.
func (l *limitListener) refused(reason string) {
	l.m.limited.WithLabelValues(l.name, reason).Inc()
}

// Accept returns the next connection within the caps.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host := remoteHost(nc)
		l.mu.Lock()
		reason := ""
		switch {
		case l.total >= l.lim.MaxConns:
			reason = limitConns
		case l.byAddr[host] >= l.lim.MaxConnsPerAddr:
			reason = limitConnsAddr
		default:
			l.total++
			l.byAddr[host]++
		}
		l.mu.Unlock()
		if reason != "" {
			l.refused(reason)
			nc.Close()
			continue
		}
		l.m.open.WithLabelValues(l.name).Inc()
		return &limitedConn{Conn: nc, l: l, host: host}, nil
	}
}

// startHandshake takes a handshake slot; false (counted) if MaxHandshakes are running.
// The caller calls endHandshake after a true.
func (l *limitListener) startHandshake() bool {
	select {
	case l.hs <- struct{}{}:
		return true
	default:
		l.refused(limitHandshakes)
		return false
	}
}

func (l *limitListener) endHandshake() { <-l.hs }

func (l *limitListener) release(host string) {
	l.mu.Lock()
	l.total--
	if l.byAddr[host]--; l.byAddr[host] == 0 {
		delete(l.byAddr, host)
	}
	l.mu.Unlock()
	l.m.open.WithLabelValues(l.name).Dec()
}

func remoteHost(nc net.Conn) string {
	a := nc.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(a); err == nil {
		return h
	}
	return a
}

// limitedConn is a connection counted by its limitListener until closed.
type limitedConn struct {
	net.Conn
	l    *limitListener
	host string
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.host) })
	return err
}

// idleConn closes a served client connection that stays silent for IdleTimeout while
// active reports nothing in flight: each Read waits at most IdleTimeout for bytes, and a
// timeout while the connection is active (a request being served, a subscription open)
// only starts a new wait.
// It wraps the TCP connection under TLS, so a timeout never reaches the TLS layer, and
// it does nothing until armed (after the handshakes, which set deadlines of their own).
type idleConn struct {
	net.Conn
	timeout time.Duration
	active  func() bool
	onIdle  func()
	armed   atomic.Bool
}

func (c *idleConn) Read(p []byte) (int, error) {
	if !c.armed.Load() {
		return c.Conn.Read(p)
	}
	for {
		c.Conn.SetReadDeadline(time.Now().Add(c.timeout))
		n, err := c.Conn.Read(p)
		var ne net.Error
		if n == 0 && err != nil && errors.As(err, &ne) && ne.Timeout() {
			if c.active() {
				continue
			}
			c.onIdle()
		}
		return n, err
	}
}

// handshake runs a client connection's TLS and protocol handshakes within one
// HandshakeTimeout and a MaxHandshakes slot of ln; false (nc closed) if either fails.
func (n *Node) handshake(ln *limitListener, nc net.Conn) (net.Conn, Identity, bool) {
	if !ln.startHandshake() {
		nc.Close()
		return nil, Identity{}, false
	}
	defer ln.endHandshake()
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Limits.HandshakeTimeout)
	defer cancel()
	sc, who, err := n.acceptTLS(ctx, nc)
	if err != nil {
		n.handshakeFailed(ln, err)
		nc.Close()
		return nil, Identity{}, false
	}
	if _, err := wire.ServerHandshake(ctx, sc, n.cfg.ClusterID, n.cfg.ID); err != nil {
		n.handshakeFailed(ln, err)
		sc.Close()
		return nil, Identity{}, false
	}
	return sc, who, true
}

// handshakeFailed counts a handshake that ran out of time.
func (n *Node) handshakeFailed(ln *limitListener, err error) {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		ln.refused(limitHandshake)
	}
}

// active reports whether the connection has a request in flight or a subscription open:
// it is not idle, however long it stays silent.
func (cc *clientConn) active() bool {
	if len(cc.sem) > 0 {
		return true
	}
	cc.subs.mu.Lock()
	defer cc.subs.mu.Unlock()
	return len(cc.subs.byID) > 0
}
