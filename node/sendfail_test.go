package node

import (
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// sendErrors returns lockstep_client_send_errors_total{reason} of m.
func sendErrors(t *testing.T, m *Metrics, reason sendReason) float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "lockstep_client_send_errors_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason.String() {
					return s.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no lockstep_client_send_errors_total{reason=%q}", reason)
	return 0
}

// sendTestConn is a server-side clientConn over an in-memory pipe, with a node that has
// only a logger and the send-failure metric; the other end of the pipe is returned for the test to read.
func sendTestConn(t *testing.T, cfg wire.ConnConfig) (*clientConn, net.Conn) {
	t.Helper()
	n := &Node{log: testLogger(t), metrics: &Metrics{Registry: prometheus.NewRegistry()}}
	n.metrics.sendFailures = newSendFailures(n.metrics.Registry)
	server, peer := net.Pipe()
	c, err := wire.NewConn(server, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); peer.Close() })
	return &clientConn{n: n, c: c, sem: make(chan struct{}, 1)}, peer
}

// TestSendFailuresAreCounted: a response the server cannot queue is counted by reason
// and handled, never dropped in silence (issue 7): a closed connection, a client that does
// not read (its connection is closed), and a response larger than a frame (the request is
// answered with TooLarge instead).
func TestSendFailuresAreCounted(t *testing.T) {
	t.Run("closed", func(t *testing.T) {
		cc, _ := sendTestConn(t, wire.ConnConfig{})
		cc.c.Close()
		cc.send(&wire.Response{ID: 1})
		if got := sendErrors(t, cc.n.metrics, sendClosed); got != 1 {
			t.Fatalf("closed: got %v, want 1", got)
		}
	})
	t.Run("queue full", func(t *testing.T) {
		// Nobody reads the pipe: the writer holds at most one frame, the queue one more.
		cc, _ := sendTestConn(t, wire.ConnConfig{SendQueueFrames: 1})
		for id := uint64(1); id <= 3 && sendErrors(t, cc.n.metrics, sendQueueFull) == 0; id++ {
			cc.send(&wire.Response{ID: id})
		}
		if got := sendErrors(t, cc.n.metrics, sendQueueFull); got != 1 {
			t.Fatalf("queue full: got %v, want 1", got)
		}
		// The connection was closed: the next response fails as closed.
		cc.send(&wire.Response{ID: 4})
		if got := sendErrors(t, cc.n.metrics, sendClosed); got != 1 {
			t.Fatalf("after queue full: closed got %v, want 1", got)
		}
	})
	t.Run("too large", func(t *testing.T) {
		cc, peer := sendTestConn(t, wire.ConnConfig{})
		got := make(chan wire.Response, 1)
		go func() {
			defer close(got)
			body, err := wire.NewFrameReader(peer, 0).ReadFrame()
			if err != nil {
				return
			}
			var resp wire.Response
			if wire.DecodeResponse(body, &resp) == nil {
				got <- resp
			}
		}()
		cc.send(&wire.Response{ID: 7, Value: make([]byte, wire.DefaultMaxFrameBytes)})
		if n := sendErrors(t, cc.n.metrics, sendTooLarge); n != 1 {
			t.Fatalf("too large: got %v, want 1", n)
		}
		select {
		case resp, ok := <-got:
			if !ok || resp.ID != 7 || resp.Code != wire.CodeTooLarge {
				t.Fatalf("the client got %+v (%t), want request 7 answered with %v", resp, ok, wire.CodeTooLarge)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the request was never answered")
		}
	})
}
