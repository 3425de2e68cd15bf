package node

import (
	"context"
	"errors"
	"io"
	"net"
	"time"
)

// Silent connections (docs/security.md, Denial of service). A connection that has sent
// nothing yet costs the node a descriptor and a goroutine, and nothing else:
//
//  1. It holds no handshake place: it takes one (startHandshake) only once its first byte
//     has arrived, which a TLS client sends at once (its ClientHello).
//  2. It is closed after Limits.FirstByteTimeout if that byte does not come.
//  3. On the client and Raft ports (limitListener.evict), when a connection arrives past
//     MaxConns or its address's MaxConnsPerAddr, the oldest connection that has sent
//     nothing yet (of that address, for the per-address cap) is closed to make room, and
//     counted as silent_evicted. So silent connections never keep out a peer that speaks.

// awaitFirstByte waits for nc's first byte, at most timeout and within ctx (which ends
// the wait when cancelled), and returns nc with that byte to be read again first; from
// then on the connection is no longer silent (evictable). A failure is counted
// (first_byte_timeout, or handshake_timeout when ctx's deadline came first).
func (l *limitListener) awaitFirstByte(ctx context.Context, nc net.Conn, timeout time.Duration) (*prefixConn, error) {
	pc, err := awaitFirstByte(ctx, nc, timeout)
	var ne net.Error
	switch {
	case err == nil:
		l.spoke(nc)
	case errors.Is(err, context.DeadlineExceeded):
		l.refused(limitHandshake)
	case errors.As(err, &ne) && ne.Timeout():
		l.refused(limitFirstByte)
	}
	return pc, err
}

// spoke marks the connection under nc as no longer silent.
func (l *limitListener) spoke(nc net.Conn) {
	c := limitedOf(nc)
	if c == nil {
		return
	}
	l.mu.Lock()
	if c.elem != nil {
		l.silent.Remove(c.elem)
		c.elem = nil
	}
	l.mu.Unlock()
}

// limitedOf returns the limitedConn under nc (wrapped in an idleConn on the client
// port), or nil.
func limitedOf(nc net.Conn) *limitedConn {
	for {
		switch c := nc.(type) {
		case *limitedConn:
			return c
		case *idleConn:
			nc = c.Conn
		default:
			return nil
		}
	}
}

// oldestSilent returns the oldest connection that has sent nothing yet, from host (any
// host if ""), or nil; l.mu is held.
func (l *limitListener) oldestSilent(host string) *limitedConn {
	for e := l.silent.Front(); e != nil; e = e.Next() {
		if c := e.Value.(*limitedConn); host == "" || c.host == host {
			return c
		}
	}
	return nil
}

// awaitFirstByte is limitListener.awaitFirstByte without the counting and marking: when
// ctx's deadline comes first and passes, the error is context.DeadlineExceeded.
func awaitFirstByte(ctx context.Context, nc net.Conn, timeout time.Duration) (*prefixConn, error) {
	deadline := time.Now().Add(timeout)
	d, ok := ctx.Deadline()
	byCtx := ok && d.Before(deadline)
	if byCtx {
		deadline = d
	}
	nc.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { nc.SetReadDeadline(time.Unix(1, 0)) }) // Close interrupts
	var first [1]byte
	_, err := io.ReadFull(nc, first[:])
	if !stop() {
		return nil, ctx.Err()
	}
	var ne net.Error
	if err != nil && byCtx && errors.As(err, &ne) && ne.Timeout() {
		return nil, context.DeadlineExceeded
	}
	if err != nil {
		return nil, err
	}
	nc.SetReadDeadline(time.Time{})
	return &prefixConn{Conn: nc, first: first[:]}, nil
}
