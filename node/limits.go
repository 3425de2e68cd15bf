package node

import (
	"cmp"
	"container/list"
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
	// a connection whose first byte arrives past it is closed. A connection takes its
	// place only when its first byte arrives: a silent one holds none. Default 64.
	MaxHandshakes int
	// MaxHandshakesPerAddr is the most of a listener's handshakes one remote IP address
	// runs at once, so that one address cannot take every place. On the Raft port the
	// hosts of the cluster's members are exempt, and a quarter of MaxHandshakes is kept
	// for them. Default 32.
	MaxHandshakesPerAddr int
	// FirstByteTimeout closes a connection that sends nothing for this long after it is
	// accepted (a TLS client sends its ClientHello at once). Default 2s.
	FirstByteTimeout time.Duration
	// HandshakeTimeout bounds a connection's TLS and protocol handshakes together, from
	// its accept. Default 10s.
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
		MaxConns:             1024,
		MaxConnsPerAddr:      256,
		MaxHandshakes:        64,
		MaxHandshakesPerAddr: 32,
		FirstByteTimeout:     2 * time.Second,
		HandshakeTimeout:     10 * time.Second,
		IdleTimeout:          5 * time.Minute,
		MaxFrameBytes:        wire.DefaultMaxFrameBytes,
		InflightBytes:        64 << 20,
		AdminReadTimeout:     10 * time.Second,
		AdminWriteTimeout:    30 * time.Second,
		AdminIdleTimeout:     time.Minute,
		AdminMaxHeaderBytes:  16 << 10,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	l.MaxConns = cmp.Or(l.MaxConns, d.MaxConns)
	l.MaxConnsPerAddr = cmp.Or(l.MaxConnsPerAddr, d.MaxConnsPerAddr)
	l.MaxHandshakes = cmp.Or(l.MaxHandshakes, d.MaxHandshakes)
	l.MaxHandshakesPerAddr = cmp.Or(l.MaxHandshakesPerAddr, d.MaxHandshakesPerAddr)
	l.FirstByteTimeout = cmp.Or(l.FirstByteTimeout, d.FirstByteTimeout)
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
	case l.MaxConns < 1 || l.MaxConnsPerAddr < 1 || l.MaxHandshakes < 1 || l.MaxHandshakesPerAddr < 1:
		return fmt.Errorf("%w: connection limits must be positive", ErrNodeConfig)
	case l.HandshakeTimeout < 0 || l.FirstByteTimeout < 0 || l.IdleTimeout < 0 || l.AdminReadTimeout < 0 || l.AdminWriteTimeout < 0 || l.AdminIdleTimeout < 0:
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
	limitHsAddr     = "max_handshakes_per_addr"
	limitFirstByte  = "first_byte_timeout"
	// limitSilentEvicted: a connection that had sent nothing, closed to make room for a
	// new one when a connection cap was reached.
	limitSilentEvicted = "silent_evicted"
	limitHandshake     = "handshake_timeout"
	limitIdle          = "idle_timeout"
	limitBudget        = "inflight_bytes"
)

// limitMetrics count connections refused or closed by a limit, by listener and reason,
// and the connections each listener holds.
type limitMetrics struct {
	limited  *prometheus.CounterVec
	open     *prometheus.GaugeVec
	reclaims prometheus.Counter // memory given back after the read budget drained (reclaim.go)
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
	m.reclaims = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "lockstep_memory_reclaims_total",
		Help: "Times the node collected and returned memory to the OS after the budget of request bytes being received drained.",
	})
	reg.MustRegister(m.limited, m.open, m.reclaims)
	return m
}

// limitListener enforces MaxConns, MaxConnsPerAddr, MaxHandshakes and
// MaxHandshakesPerAddr on one listener. Accept returns only connections within the
// connection caps; the others are closed at once and counted. A returned connection frees
// its place when closed. Its handshake takes a place (startHandshake) once its first byte
// arrived (awaitFirstByte).
type limitListener struct {
	net.Listener
	name string
	lim  Limits
	m    *limitMetrics
	// peer, if set, reports whether a remote host is a member's (the Raft port): exempt
	// from the per-address caps, and the only one to use the last quarter of the
	// handshake places.
	peer atomic.Pointer[func(host string) bool]
	// evict: a connection that has sent nothing yet may be closed to make room for a
	// new one (silent.go). Set for the client and Raft ports, before Accept runs.
	evict bool

	mu       sync.Mutex
	total    int
	byAddr   map[string]int
	hsTotal  int            // handshakes in progress
	hsByAddr map[string]int // handshakes in progress, by remote host
	silent   list.List      // of *limitedConn that have sent nothing yet, oldest first (with evict)
}

func newLimitListener(ln net.Listener, name string, lim Limits, m *limitMetrics) *limitListener {
	return &limitListener{Listener: ln, name: name, lim: lim, m: m,
		byAddr: make(map[string]int), hsByAddr: make(map[string]int)}
}

// isPeer reports whether host is exempt from the per-address caps.
func (l *limitListener) isPeer(host string) bool {
	f := l.peer.Load()
	return f != nil && (*f)(host)
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
		peer := l.isPeer(host)
		l.mu.Lock()
		reason := ""
		var victim *limitedConn // a silent connection closed to make room
		switch {
		case l.total >= l.lim.MaxConns:
			if victim = l.oldestSilent(""); victim == nil {
				reason = limitConns
			}
		case l.byAddr[host] >= l.lim.MaxConnsPerAddr && !peer:
			if victim = l.oldestSilent(host); victim == nil {
				reason = limitConnsAddr
			}
		}
		var c *limitedConn
		if reason == "" {
			if victim != nil {
				l.releaseLocked(victim)
			}
			l.total++
			l.byAddr[host]++
			c = &limitedConn{Conn: nc, l: l, host: host}
			if l.evict {
				c.elem = l.silent.PushBack(c)
			}
		}
		l.mu.Unlock()
		if victim != nil {
			l.refused(limitSilentEvicted)
			victim.Conn.Close()
		}
		if reason != "" {
			l.refused(reason)
			nc.Close()
			continue
		}
		l.m.open.WithLabelValues(l.name).Inc()
		return c, nil
	}
}

// startHandshake takes a handshake place for a connection from host; false (counted) if
// MaxHandshakes are running, or MaxHandshakesPerAddr from host. On a listener that knows
// its peers, other hosts may take only three quarters of the places. The caller calls
// endHandshake(host) after a true.
func (l *limitListener) startHandshake(host string) bool {
	peer := l.isPeer(host)
	total := l.lim.MaxHandshakes
	if !peer && l.peer.Load() != nil {
		total -= l.lim.MaxHandshakes / 4
	}
	l.mu.Lock()
	reason := ""
	switch {
	case l.hsTotal >= total:
		reason = limitHandshakes
	case l.hsByAddr[host] >= l.lim.MaxHandshakesPerAddr && !peer:
		reason = limitHsAddr
	default:
		l.hsTotal++
		l.hsByAddr[host]++
	}
	l.mu.Unlock()
	if reason != "" {
		l.refused(reason)
		return false
	}
	return true
}

func (l *limitListener) endHandshake(host string) {
	l.mu.Lock()
	l.hsTotal--
	if l.hsByAddr[host]--; l.hsByAddr[host] == 0 {
		delete(l.hsByAddr, host)
	}
	l.mu.Unlock()
}

// releaseLocked frees c's place, once; l.mu is held.
func (l *limitListener) releaseLocked(c *limitedConn) {
	if c.released {
		return
	}
	c.released = true
	l.total--
	if l.byAddr[c.host]--; l.byAddr[c.host] == 0 {
		delete(l.byAddr, c.host)
	}
	if c.elem != nil {
		l.silent.Remove(c.elem)
		c.elem = nil
	}
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
	// Guarded by l.mu:
	released bool          // its place is free
	elem     *list.Element // in l.silent while it has sent nothing; nil after
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
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
// HandshakeTimeout, and from its first byte on (FirstByteTimeout) within a handshake
// place of ln; false (nc closed) if any of it fails.
func (n *Node) handshake(ln *limitListener, nc net.Conn) (net.Conn, Identity, bool) {
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Limits.HandshakeTimeout)
	defer cancel()
	pc, err := ln.awaitFirstByte(ctx, nc, n.cfg.Limits.FirstByteTimeout)
	if err != nil {
		nc.Close()
		return nil, Identity{}, false
	}
	host := remoteHost(nc)
	if !ln.startHandshake(host) {
		nc.Close()
		return nil, Identity{}, false
	}
	defer ln.endHandshake(host)
	sc, who, err := n.acceptTLS(ctx, pc)
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
