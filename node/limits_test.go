package node

import (
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/lockstepdb/lockstep/internal/certs"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/procedures"
)

// TestLimitListenerCaps: the per-listener and per-address caps close the connections past
// them, count each, and free a place when a held connection closes.
func TestLimitListenerCaps(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxConns, lim.MaxConnsPerAddr = 3, 2
	ln, m := testLimitListener(t, "client", lim)
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func(local string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	closedByServer := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err := c.Read(make([]byte, 1))
		return err == io.EOF
	}
	dial("127.0.0.1")
	dial("127.0.0.1")
	if c := dial("127.0.0.1"); !closedByServer(c) {
		t.Error("third connection from one address held past MaxConnsPerAddr 2")
	}
	dial("127.0.0.2")
	if c := dial("127.0.0.3"); !closedByServer(c) {
		t.Error("fourth connection held past MaxConns 3")
	}
	if got := value(t, m.limited.WithLabelValues("client", limitConnsAddr)); got != 1 {
		t.Errorf("max_conns_per_addr count %v, want 1", got)
	}
	if got := value(t, m.limited.WithLabelValues("client", limitConns)); got != 1 {
		t.Errorf("max_conns count %v, want 1", got)
	}
	(<-accepted).Close() // frees a place
	if c := dial("127.0.0.3"); closedByServer(c) {
		t.Error("connection refused after a held one closed")
	}
	if got := value(t, m.open.WithLabelValues("client")); got != 3 {
		t.Errorf("open gauge %v, want 3", got)
	}
}

// TestLimitListenerHandshakes: past MaxHandshakes in progress, startHandshake refuses.
func TestLimitListenerHandshakes(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxHandshakes = 2
	ln, m := testLimitListener(t, "raft", lim)
	const h = "127.0.0.1"
	if !ln.startHandshake(h) || !ln.startHandshake(h) {
		t.Fatal("handshake refused under the cap")
	}
	if ln.startHandshake(h) {
		t.Fatal("third handshake allowed with MaxHandshakes 2")
	}
	ln.endHandshake(h)
	if !ln.startHandshake(h) {
		t.Fatal("handshake refused after one ended")
	}
	if got := value(t, m.limited.WithLabelValues("raft", limitHandshakes)); got != 1 {
		t.Errorf("max_handshakes count %v, want 1", got)
	}
}

// value is the current value of a counter or gauge.
func value(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

// TestAdminTimeouts: the admin server closes a connection that completes no request in
// AdminReadTimeout (here a TLS handshake that never goes on); before, only the 5 s header
// timeout applied.
func TestAdminTimeouts(t *testing.T) {
	n, err := Start(Config{ID: "lone", DataDir: t.TempDir(), CertsDir: testCertsDir, AdminAddr: "127.0.0.1:0", Logger: testLogger(t),
		Limits: Limits{AdminReadTimeout: 500 * time.Millisecond}}, procedures.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	c, err := net.Dial("tcp", n.AdminAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{22}) // the start of a TLS record, and nothing more
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("connection not closed by the server: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("closed after %v, read timeout 500ms", took)
	}
}

// TestClientHandshakeTimeout: a client-port connection that stalls in any of its
// handshakes (before its first byte, inside TLS, before the protocol's Hello) is closed
// within one HandshakeTimeout and counted as handshake_timeout.
func TestClientHandshakeTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	n, err := Start(Config{ID: "lone", DataDir: t.TempDir(), CertsDir: testCertsDir, Logger: testLogger(t),
		Limits: Limits{HandshakeTimeout: timeout}}, procedures.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	for i, tc := range []struct {
		name  string
		stall func(t *testing.T, nc net.Conn) net.Conn // returns the connection to read
	}{
		{"silent", func(t *testing.T, nc net.Conn) net.Conn { return nc }},
		{"in TLS", func(t *testing.T, nc net.Conn) net.Conn {
			nc.Write([]byte{recordTypeHandshake}) // the start of a TLS record, and nothing more
			return nc
		}},
		{"before Hello", func(t *testing.T, nc net.Conn) net.Conn { return testDialTLS(t, nc) }},
	} {
		nc, err := net.Dial("tcp", n.ClientAddr())
		if err != nil {
			t.Fatal(err)
		}
		c := tc.stall(t, nc)
		start := time.Now()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = io.ReadAll(c)
		took := time.Since(start)
		nc.Close()
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("#%d %s: connection not closed by the server: %v", i, tc.name, err)
		}
		if took > 10*timeout {
			t.Errorf("#%d %s: closed after %v, handshake timeout %v", i, tc.name, took, timeout)
		}
		// TLS closes the connection itself when its context ends: the count may follow.
		testutil.WaitFor(t, 5*time.Second, func() error {
			if got, want := value(t, n.metrics.limits.limited.WithLabelValues("client", limitHandshake)), float64(i+1); got != want {
				return fmt.Errorf("#%d %s: handshake_timeout count %v, want %v", i, tc.name, got, want)
			}
			return nil
		})
	}
}

// TestRaftHandshakeTimeout: a Raft connection that stalls in its TLS handshake is closed
// within one HandshakeTimeout and counted as handshake_timeout, and the layer closes with
// nothing left running.
func TestRaftHandshakeTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	st, err := certs.NewNodeStore(testCertsDir)
	if err != nil {
		t.Fatal(err)
	}
	m := newLimitMetrics(prometheus.NewRegistry())
	l, err := newTLSStreamLayer("127.0.0.1:0", "", st, testLogger(t), nil, Limits{HandshakeTimeout: timeout}.withDefaults(), m)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Write([]byte{recordTypeHandshake}) // the start of a TLS record, and nothing more
	start := time.Now()
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(nc); err != nil {
		t.Fatalf("connection not closed by the layer: %v", err)
	}
	if took := time.Since(start); took > 10*timeout {
		t.Errorf("closed after %v, handshake timeout %v", took, timeout)
	}
	testutil.WaitFor(t, 5*time.Second, func() error {
		if got := value(t, m.limited.WithLabelValues("raft", limitHandshake)); got != 1 {
			return fmt.Errorf("handshake_timeout count %v, want 1", got)
		}
		return nil
	})
}

// TestLimitsWithDefaults: every zero limit takes its default, and a limit given stays.
func TestLimitsWithDefaults(t *testing.T) {
	if got, want := (Limits{}).withDefaults(), DefaultLimits(); got != want {
		t.Errorf("zero limits: got %+v, want %+v", got, want)
	}
	given := Limits{MaxConns: 1, MaxConnsPerAddr: 2, MaxHandshakes: 3, HandshakeTimeout: 4, IdleTimeout: 5, MaxFrameBytes: 6,
		InflightBytes: 7, AdminReadTimeout: 8, AdminWriteTimeout: 9, AdminIdleTimeout: 10, AdminMaxHeaderBytes: 11,
		MaxHandshakesPerAddr: 12, FirstByteTimeout: 13}
	if got := given.withDefaults(); got != given {
		t.Errorf("given limits: got %+v, want %+v", got, given)
	}
}

// testLimitListener is a limitListener named name with lim over a fresh loopback listener,
// with its own metrics; the test closes it when it ends.
func testLimitListener(t *testing.T, name string, lim Limits) (*limitListener, *limitMetrics) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := newLimitMetrics(prometheus.NewRegistry())
	ln := newLimitListener(raw, name, lim, m)
	t.Cleanup(func() { ln.Close() })
	return ln, m
}
