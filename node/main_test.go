package node

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/certs"
)

// testCertsDir holds the certificates the package's tests give their nodes (a throw-away
// CA, a loopback node certificate, client "root"), and testTLS is root's client TLS
// configuration: TestMain makes them once and removes them at the end.
var (
	testCertsDir string
	testTLS      *tls.Config
)

// TestMain makes the test certificates and checks that nodes shut down leave no
// goroutine behind.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lockstep-node-certs-")
	if err == nil {
		err = certs.CreateLoopback(dir, "root", "other")
	}
	if err == nil {
		testTLS, err = client.LoadTLS(dir, "root")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "test certificates:", err)
		os.Exit(1)
	}
	testCertsDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// testClientConfig returns the client settings for the package's test nodes (root's
// certificate) with addrs.
func testClientConfig(addrs ...string) client.Config {
	return client.Config{Addrs: addrs, TLS: testTLS}
}

// testDialTLS wraps a plain connection to a test node in TLS as client root.
func testDialTLS(t *testing.T, nc net.Conn) net.Conn {
	t.Helper()
	cfg := testTLS.Clone()
	cfg.ServerName = "127.0.0.1"
	tc := tls.Client(nc, cfg)
	if err := tc.Handshake(); err != nil {
		nc.Close()
		t.Fatalf("TLS handshake: %v", err)
	}
	return tc
}
