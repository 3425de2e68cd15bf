package testutil

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/certs"
)

// Certificates of the node processes tests start. Nodes are secure by default (they
// refuse to start without --certs-dir unless given --insecure), so StartProc gives every
// process it starts the shared test certificates through $LOCKSTEP_CERTS_DIR, which
// `lockstep node` and every CLI command take as their --certs-dir default, unless the
// caller chose: --certs-dir or --insecure among the arguments, or LOCKSTEP_CERTS_DIR in
// the environment. Tests of other CAs, renewals or insecure mode pass their own.

// CertsDirEnv is the environment variable `lockstep` reads as its --certs-dir default.
const CertsDirEnv = "LOCKSTEP_CERTS_DIR"

// sharedCerts is the directory of the shared test certificates, made once per process.
var sharedCerts = sync.OnceValues(makeSharedCerts)

// makeSharedCerts returns the shared test certificates: a throw-away CA, a node
// certificate for the loopback addresses, and client "root". They live in one directory
// per user under the system temp dir, made once and reused by later test runs while it
// still loads (the CA lasts 10 years), so that no run leaves a directory behind.
func makeSharedCerts() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("lockstep-test-certs-v1-%d", os.Getuid()))
	if usable(dir) {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "lockstep-test-certs-new-")
	if err != nil {
		return "", err
	}
	if err := certs.CreateLoopback(tmp, "root"); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	os.RemoveAll(dir) // unusable: replaced
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if usable(dir) { // another test process made it first
			return dir, nil
		}
		return "", err
	}
	return dir, nil
}

// usable reports whether dir holds loadable test certificates and is this user's alone.
func usable(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return false
	}
	if _, err := certs.LoadNode(dir); err != nil {
		return false
	}
	_, err = certs.LoadClient(dir, "root")
	return err == nil
}

// SharedCertsDir returns the directory of the shared test certificates, or why it cannot
// be made; CertsDir is the same for tests.
func SharedCertsDir() (string, error) { return sharedCerts() }

// CertsDir returns the directory of the shared test certificates (ca.crt, node.crt,
// client.root.crt and their keys), which StartProc gives node processes by default.
func CertsDir(tb testing.TB) string {
	tb.Helper()
	dir, err := sharedCerts()
	if err != nil {
		tb.Fatalf("test certificates: %v", err)
	}
	return dir
}

// ClientTLS returns the TLS configuration of client "root" of the shared test
// certificates, for client.Config.TLS.
func ClientTLS(tb testing.TB) *tls.Config {
	tb.Helper()
	return clientTLS(tb, CertsDir(tb))
}

func clientTLS(tb testing.TB, dir string) *tls.Config {
	st, err := certs.NewClientStore(dir, "root")
	if err != nil {
		tb.Fatalf("test certificates: %v", err)
	}
	return st.LibraryConfig()
}

// HTTPClient returns an HTTP client for the admin (HTTPS) ports of nodes using the
// shared test certificates, presenting client root's certificate. Use https:// URLs.
func HTTPClient(tb testing.TB) *http.Client {
	tb.Helper()
	return &http.Client{Transport: &http.Transport{TLSClientConfig: ClientTLS(tb)}, Timeout: 10 * time.Second}
}
