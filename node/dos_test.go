package node

import (
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

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
	lim := DefaultLimits()
	lim.MaxHandshakes, lim.MaxHandshakesPerAddr = 8, 3
	ln, m := testLimitListener(t, "raft", lim)
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

// TestSilentConnectionEvicted: with MaxConnsPerAddr connections from one address that
// have sent nothing, a new connection from it is let in and the oldest silent one closed
// (silent_evicted), so silent connections past the cap keep nobody out. A connection
// that has spoken is never closed for room.
func TestSilentConnectionEvicted(t *testing.T) {
	n, err := Start(Config{ID: "lone", DataDir: t.TempDir(), CertsDir: testCertsDir, Logger: testLogger(t),
		Limits: Limits{MaxConnsPerAddr: 4, FirstByteTimeout: time.Minute}}, procedures.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	dial := func() net.Conn {
		nc, err := net.Dial("tcp", n.ClientAddr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		return nc
	}
	spoken := testDialTLS(t, dial()) // has spoken: not evictable
	defer spoken.Close()
	var silent []net.Conn
	for range 3 {
		silent = append(silent, dial())
	}
	ln := n.ln.(*limitListener)
	testutil.WaitFor(t, 5*time.Second, func() error { // the node has accepted all four
		ln.mu.Lock()
		defer ln.mu.Unlock()
		if ln.total != 4 || ln.silent.Len() != 3 {
			return fmt.Errorf("%d connections, %d silent; want 4, 3", ln.total, ln.silent.Len())
		}
		return nil
	})
	testDialTLS(t, dial()) // past the cap: let in, the oldest silent one closed
	silent[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(silent[0]); err != nil {
		t.Fatalf("the oldest silent connection was not closed: %v", err)
	}
	if got := value(t, n.metrics.limits.limited.WithLabelValues("client", limitSilentEvicted)); got != 1 {
		t.Errorf("silent_evicted count %v, want 1", got)
	}
	// The connection that spoke is still served.
	spoken.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := spoken.Read(make([]byte, 1)); !isTimeoutErr(err) {
		t.Errorf("the connection that spoke: %v, want it open", err)
	}
}

func isTimeoutErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
