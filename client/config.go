package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"time"
)

// MaxSessionWindow is the most results a session may have outstanding above its
// acknowledged sequence number: a server refuses a request further ahead
// (ErrOverloaded). Config.MaxInflight may not exceed it.
const MaxSessionWindow = 4096

// maxCandidates bounds the node addresses the client remembers (seeds plus leader hints).
const maxCandidates = 64

// Config configures a Client. Zero fields take their defaults (see DefaultConfig).
type Config struct {
	// Addrs are the client addresses of seed nodes, "host:port". The client finds the
	// leader from any of them and learns further addresses from leader hints. Required.
	Addrs []string
	// ClusterID is the cluster the client expects; a node of another cluster is refused.
	// Empty accepts any cluster.
	ClusterID string
	// DialTimeout bounds connecting to a node and the protocol handshake. Default 2s.
	DialTimeout time.Duration
	// RequestTimeout bounds one attempt of a request; when it passes the client retries
	// (the caller's context bounds the whole request). Default 5s.
	//
	// It is not what bounds the wait for a paused or frozen leader: SuspectAfter is. An
	// attempt is not cut shorter than RequestTimeout merely for being slow, since
	// resending slow requests would add load to a leader that is slow because it is busy.
	RequestTimeout time.Duration
	// SuspectAfter is how long the leader may owe answers on its connection without
	// sending anything before the client suspects it: it then asks the other nodes, with
	// OpStatus, which leader they know and in which term. If they name a leader of a newer
	// term, the attempts waiting at the old one end and are retried at the new one at
	// once; if they still name the old leader in the current term, the attempts go on
	// waiting, and the question is asked again while the silence lasts. An attempt that
	// times out (on RequestTimeout or on the caller's deadline) while the node sent
	// nothing, or that cannot connect, makes the client suspect the node at once. See the
	// package documentation, "Leader". Keep it about the cluster's election time: a new
	// leader is then found within about SuspectAfter of its election. Default 1s.
	SuspectAfter time.Duration
	// MaxRetries is how many times a request is retried after its first attempt when it
	// fails with an error worth retrying (not the leader, not ready, connection lost,
	// unknown outcome, attempt timeout, overloaded). Default 10; negative means no limit
	// but the caller's context. Dial is not bound by it: it waits for a leader until its
	// context ends.
	MaxRetries int
	// RetryBackoff is the pause before the first retry that is not a leader redirect; it
	// doubles with each further retry, with jitter, up to MaxRetryBackoff. Default 20ms.
	RetryBackoff time.Duration
	// MaxRetryBackoff caps the pause between retries. Default 1s; at least RetryBackoff.
	MaxRetryBackoff time.Duration
	// MaxInflight bounds the invocations outstanding in the client's session, counted
	// from the oldest one whose result has not arrived, so a slow request also holds back
	// new ones; it bounds the session-less requests (ReadAny queries, stream reads,
	// status) separately. At most MaxSessionWindow. Default 1024.
	MaxInflight int
	// Logger receives the client's logs (redirects, reconnects, sessions). Default: none.
	Logger *slog.Logger
	// TLS secures every connection: mutual TLS 1.3 with a client certificate of the
	// cluster's CA (LoadTLS builds it from a certificates directory). The client clones
	// it for each connection and sets ServerName to the host of the address dialed when
	// it is empty. Required unless Insecure.
	TLS *tls.Config
	// Insecure connects in plaintext, to nodes started with --insecure. Exactly one of
	// TLS and Insecure must be set.
	Insecure bool
	// Dial, when set, opens the TCP connection to a node's client address instead of a
	// plain net.Dialer (the fault-injection harness routes each client through its own
	// proxies this way). TLS and the handshake still run on the connection it returns,
	// with the address asked for as the server name.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
}

// DefaultConfig returns a Config with every field but Addrs and ClusterID at its default.
func DefaultConfig() Config {
	return Config{
		DialTimeout:     2 * time.Second,
		RequestTimeout:  5 * time.Second,
		SuspectAfter:    time.Second,
		MaxRetries:      10,
		RetryBackoff:    20 * time.Millisecond,
		MaxRetryBackoff: time.Second,
		MaxInflight:     1024,
	}
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.DialTimeout == 0 {
		c.DialTimeout = d.DialTimeout
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = d.RequestTimeout
	}
	if c.SuspectAfter == 0 {
		c.SuspectAfter = d.SuspectAfter
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = d.MaxRetries
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = d.RetryBackoff
	}
	if c.MaxRetryBackoff == 0 {
		c.MaxRetryBackoff = max(d.MaxRetryBackoff, c.RetryBackoff)
	}
	if c.MaxInflight == 0 {
		c.MaxInflight = d.MaxInflight
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first invalid field as an error wrapping ErrBadConfig. Zero fields
// are valid: they take their defaults.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, args...)...)
	}
	if len(c.Addrs) == 0 {
		return bad("no seed addresses")
	}
	for i, a := range c.Addrs {
		if a == "" {
			return bad("seed address %d is empty", i)
		}
	}
	switch {
	case c.TLS == nil && !c.Insecure:
		return bad("no TLS configuration: set TLS (see LoadTLS) or, for nodes started with --insecure, Insecure")
	case c.TLS != nil && c.Insecure:
		return bad("both TLS and Insecure are set")
	}
	c = c.withDefaults()
	switch {
	case c.DialTimeout < 0:
		return bad("DialTimeout %v is negative", c.DialTimeout)
	case c.RequestTimeout < 0:
		return bad("RequestTimeout %v is negative", c.RequestTimeout)
	case c.SuspectAfter < 0:
		return bad("SuspectAfter %v is negative", c.SuspectAfter)
	case c.RetryBackoff < 0:
		return bad("RetryBackoff %v is negative", c.RetryBackoff)
	case c.MaxRetryBackoff < c.RetryBackoff:
		return bad("MaxRetryBackoff %v is below RetryBackoff %v", c.MaxRetryBackoff, c.RetryBackoff)
	case c.MaxInflight < 1 || c.MaxInflight > MaxSessionWindow:
		return bad("MaxInflight %d not in 1..%d", c.MaxInflight, MaxSessionWindow)
	}
	return nil
}
