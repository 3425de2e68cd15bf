package client

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/vmihailenco/msgpack/v5"
)

// fakeNode is a scripted Lockstep node: a TCP listener on 127.0.0.1 that speaks the wire
// protocol and hands every request to handle, on the connection's read goroutine. handle
// answers with fc.reply (at once or later, from any goroutine), drops the connection with
// fc.drop, or does nothing (the request hangs).
type fakeNode struct {
	t      testing.TB
	id     string
	addr   string
	ln     net.Listener
	handle func(fc *fakeConn, req wire.Request)
	wg     sync.WaitGroup

	mu       sync.Mutex
	conns    map[*fakeConn]struct{}
	received []wire.Request // the first maxReceived requests, in arrival order
	sessions uint64         // the last session id issued
}

// maxReceived bounds the requests a fakeNode keeps for the test to look at.
const maxReceived = 10000

// fakeConn is one client connection to a fakeNode.
type fakeConn struct {
	n  *fakeNode
	wc *wire.Conn
}

// newFakeNode starts a fake node that serves requests with handle; it stops when the test
// ends.
func newFakeNode(t testing.TB, id string, handle func(fc *fakeConn, req wire.Request)) *fakeNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &fakeNode{t: t, id: id, addr: ln.Addr().String(), ln: ln, handle: handle, conns: map[*fakeConn]struct{}{}}
	n.wg.Add(1)
	go n.acceptLoop()
	t.Cleanup(n.close)
	return n
}

func (n *fakeNode) acceptLoop() {
	defer n.wg.Done()
	for {
		nc, err := n.ln.Accept()
		if err != nil {
			return
		}
		n.wg.Add(1)
		go n.serve(nc)
	}
}

func (n *fakeNode) serve(nc net.Conn) {
	defer n.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_, err := wire.ServerHandshake(ctx, nc, "test", n.id)
	cancel()
	if err != nil {
		nc.Close()
		return
	}
	wc, err := wire.NewConn(nc, wire.ConnConfig{})
	if err != nil {
		nc.Close()
		return
	}
	fc := &fakeConn{n: n, wc: wc}
	n.mu.Lock()
	n.conns[fc] = struct{}{}
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.conns, fc)
		n.mu.Unlock()
		wc.Close()
	}()
	for {
		var req wire.Request
		if err := wc.RecvRequest(&req); err != nil {
			return
		}
		n.mu.Lock()
		if len(n.received) < maxReceived {
			n.received = append(n.received, req)
		}
		n.mu.Unlock()
		n.handle(fc, req)
	}
}

// close stops the node: no new connections, every connection closed, goroutines done.
func (n *fakeNode) close() {
	n.ln.Close()
	n.mu.Lock()
	for fc := range n.conns {
		fc.wc.Close()
	}
	n.mu.Unlock()
	n.wg.Wait()
}

// requests returns the requests of op received so far (of the first maxReceived), in
// arrival order.
func (n *fakeNode) requests(op wire.Op) []wire.Request {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []wire.Request
	for _, r := range n.received {
		if r.Op == op {
			out = append(out, r)
		}
	}
	return out
}

// openSession issues the next session id.
func (n *fakeNode) openSession() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sessions++
	return n.sessions
}

// reply sends resp; a closed connection drops it, as a real one would.
func (fc *fakeConn) reply(resp wire.Response) {
	_ = fc.wc.SendResponse(context.Background(), &resp)
}

// drop closes the connection without answering.
func (fc *fakeConn) drop() { fc.wc.Close() }

// serveSessions returns a handler that opens and closes sessions, answers status and
// pings, and passes every other request to other.
func serveSessions(n **fakeNode, other func(fc *fakeConn, req wire.Request)) func(fc *fakeConn, req wire.Request) {
	return func(fc *fakeConn, req wire.Request) {
		switch req.Op {
		case wire.OpOpenSession:
			fc.reply(wire.Response{ID: req.ID, Session: (*n).openSession()})
		case wire.OpCloseSession, wire.OpPing:
			fc.reply(wire.Response{ID: req.ID})
		default:
			other(fc, req)
		}
	}
}

// startNode starts a fake node whose sessions work and whose other requests go to other.
func startNode(t testing.TB, id string, other func(fc *fakeConn, req wire.Request)) *fakeNode {
	var n *fakeNode
	n = newFakeNode(t, id, serveSessions(&n, other))
	return n
}

// value returns the msgpack encoding of v.
func value(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testConfig returns a Config for tests against addrs: fast retries, logs to t.
func testConfig(t testing.TB, addrs ...string) Config {
	cfg := DefaultConfig()
	cfg.Addrs = addrs
	cfg.Insecure = true // the fake nodes speak plaintext
	cfg.ClusterID = "test"
	cfg.RetryBackoff = time.Millisecond
	cfg.MaxRetryBackoff = 5 * time.Millisecond
	cfg.Logger = testLogger(t)
	return cfg
}

// dial dials a Client that is closed when the test ends.
func dial(t testing.TB, cfg Config) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// held is a request a handler kept for the test to answer.
type held struct {
	fc  *fakeConn
	req wire.Request
}

// recvHeld receives the next held request, failing the test if none comes in time.
func recvHeld(t testing.TB, ch <-chan held) held {
	t.Helper()
	select {
	case h := <-ch:
		return h
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a request")
		return held{}
	}
}

// waitErr receives from ch, failing the test if nothing comes in time.
func waitErr(t testing.TB, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a call to return")
		return errors.New("unreachable")
	}
}
