package node

import (
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/procedures"
)

// TestSilentConnectionsHoldNoHandshakePlace (issue 20 item 14a): connections that never
// send a byte, more of them than MaxHandshakes, take no handshake place: a TLS client
// still connects while they wait, and each is closed after FirstByteTimeout, counted as
// first_byte_timeout. Before, they held every place for HandshakeTimeout.
func TestSilentConnectionsHoldNoHandshakePlace(t *testing.T) {
	const firstByte = 200 * time.Millisecond
	n, err := Start(Config{ID: "lone", DataDir: t.TempDir(), CertsDir: testCertsDir, Logger: testLogger(t),
		Limits: Limits{MaxHandshakes: 2, FirstByteTimeout: firstByte}}, procedures.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	const silent = 5
	var held []net.Conn
	for range silent {
		nc, err := net.Dial("tcp", n.ClientAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		held = append(held, nc)
	}
	nc, err := net.Dial("tcp", n.ClientAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	testDialTLS(t, nc) // fails the test if the node refuses it
	start := time.Now()
	for i, c := range held {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadAll(c); err != nil {
			t.Fatalf("#%d: silent connection not closed by the node: %v", i, err)
		}
	}
	if took := time.Since(start); took > 10*firstByte {
		t.Errorf("silent connections closed after %v, first-byte timeout %v", took, firstByte)
	}
	testutil.WaitFor(t, 5*time.Second, func() error {
		if got := value(t, n.metrics.limits.limited.WithLabelValues("client", limitFirstByte)); got != silent {
			return fmt.Errorf("first_byte_timeout count %v, want %d", got, silent)
		}
		return nil
	})
}

// TestHandshakesPerAddr: one remote host takes at most MaxHandshakesPerAddr places; a
// member's host (on the Raft port) is exempt and may use the places kept for members.
func TestHandshakesPerAddr(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := newLimitMetrics(prometheus.NewRegistry())
	lim := DefaultLimits()
	lim.MaxHandshakes, lim.MaxHandshakesPerAddr = 8, 3
	ln := newLimitListener(raw, "raft", lim, m)
	defer ln.Close()
	for i := range 3 {
		if !ln.startHandshake("10.0.0.1") {
			t.Fatalf("#%d: handshake refused under the per-address share", i)
		}
	}
	if ln.startHandshake("10.0.0.1") {
		t.Fatal("a fourth handshake from one address allowed with MaxHandshakesPerAddr 3")
	}
	if got := value(t, m.limited.WithLabelValues("raft", limitHsAddr)); got != 1 {
		t.Errorf("max_handshakes_per_addr count %v, want 1", got)
	}
	// Members known: other hosts get three quarters of the places (6), members all 8.
	isPeer := func(h string) bool { return h == "10.0.0.9" }
	ln.peer.Store(&isPeer)
	for i := range 3 {
		if !ln.startHandshake("10.0.0.2") {
			t.Fatalf("#%d: handshake refused under the share", i)
		}
	}
	if ln.startHandshake("10.0.0.3") {
		t.Fatal("a non-member took a place kept for members")
	}
	for i := range 2 {
		if !ln.startHandshake("10.0.0.9") {
			t.Fatalf("#%d: a member refused a kept place", i)
		}
	}
	if ln.startHandshake("10.0.0.9") {
		t.Fatal("past MaxHandshakes for a member")
	}
}
