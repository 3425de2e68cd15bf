package node

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockstepdb/lockstep/internal/netaddr"
	"github.com/lockstepdb/lockstep/internal/wire"
)

// The admin server's limits.
const (
	// adminHeaderTimeout bounds reading a request's headers, so idle clients cannot pin
	// connections.
	adminHeaderTimeout = 5 * time.Second
	// adminShutdownTimeout bounds waiting for in-flight admin requests on Close.
	adminShutdownTimeout = time.Second
)

// adminServer is the node's HTTP admin server. The Node owns it: StartNode starts its
// goroutine (counted in Node.wg), Close stops it.
type adminServer struct {
	srv       *http.Server
	ln        net.Listener
	advertise string // Config.AdminAdvertise resolved: AdminAddr
}

// AdminHandler returns the node's HTTP admin endpoints, the handler the server at
// Config.AdminAddr serves; a program may also mount it on a server of its own.
//
//	GET /         the status page: HTML, the cluster's members, hashes, this node's
//	              processors and fault events (node/statuspage); it reloads itself
//	GET /metrics  Prometheus text format, from Metrics().Registry
//	GET /status   the node's status as JSON (StatusJSON)
//	GET /healthz  200 "ok" while the process serves HTTP
//	GET /readyz   200 "ready" if Readiness() is nil, else 503 and "not ready: " + the reason
func (n *Node) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", n.serveStatusPage)
	mux.Handle("GET /metrics", promhttp.HandlerFor(n.metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(NewStatusJSON(n.Status()))
	})
	mux.HandleFunc("GET /healthz", n.serveHealthz) // as on the probe server (probe_http.go)
	mux.HandleFunc("GET /readyz", n.serveReadyz)
	return mux
}

// AdminAddr returns the admin HTTP server's address as the node reports it: the
// advertised one (Config.AdminAdvertise), else the address it is bound to; "" if the node
// runs none.
func (n *Node) AdminAddr() string {
	if n.admin == nil {
		return ""
	}
	return n.admin.advertise
}

// AdminListenAddr returns the address the admin HTTP server is bound to, or "" if the
// node runs none.
func (n *Node) AdminListenAddr() string {
	if n.admin == nil {
		return ""
	}
	return n.admin.ln.Addr().String()
}

// startAdmin listens on addr and serves AdminHandler until stopAdmin: HTTPS with mutual
// TLS on a secure node, HTTP on an insecure one.
func (n *Node) startAdmin(addr string) error {
	raw, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("admin listener: %w", err)
	}
	adv, err := netaddr.Resolve(n.cfg.AdminAdvertise, raw.Addr())
	if err != nil {
		raw.Close()
		return fmt.Errorf("%w: %w", ErrNodeConfig, err)
	}
	lim := n.cfg.Limits
	// Connection caps below TLS; the TLS handshake happens on the first read, bounded by
	// ReadTimeout (whole request, handshake included).
	ln := net.Listener(newLimitListener(raw, "admin", lim, n.metrics.limits))
	if n.certs != nil {
		// HTTPS with a client certificate of the CA (node or client), like the client port.
		ln = tls.NewListener(ln, n.clientTLS)
	}
	a := &adminServer{ln: ln, advertise: adv, srv: &http.Server{
		Handler:           n.AdminHandler(),
		ReadHeaderTimeout: min(adminHeaderTimeout, lim.AdminReadTimeout),
		ReadTimeout:       lim.AdminReadTimeout,
		WriteTimeout:      lim.AdminWriteTimeout,
		IdleTimeout:       lim.AdminIdleTimeout,
		MaxHeaderBytes:    lim.AdminMaxHeaderBytes,
	}}
	n.admin = a
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Warn("admin server stopped", "err", err)
		}
	}()
	n.log.Info("admin server listening", "addr", ln.Addr().String())
	return nil
}

// stopAdmin stops the admin server, letting requests in flight finish for a moment, then
// closing every connection. The serving goroutine returns; Close waits for it.
func (n *Node) stopAdmin() {
	if n.admin == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminShutdownTimeout)
	defer cancel()
	if err := n.admin.srv.Shutdown(ctx); err != nil {
		n.admin.srv.Close()
	}
}

// StatusJSON is a node's status in JSON: wire.Status under its wire names, with state
// hashes as 16-digit hex strings (a JSON number cannot hold every uint64 exactly). /status
// serves it; `lockstep cluster status --output json` prints the same keys from the
// client's Status (cmd/lockstep/status_json.go, held equal by TestStatusJSONKeys).
type StatusJSON struct {
	wire.Status
	// Hashes is each partition's current state hash, as hex; it replaces Status.Hashes.
	Hashes []string `json:"hashes"`
	// HashChecks are the hashes recorded at hash-check positions, as hex; they replace
	// Status.HashChecks.
	HashChecks []HashCheckJSON `json:"hash_checks,omitempty"`
}

// HashCheckJSON is one hash-check record of a StatusJSON.
type HashCheckJSON struct {
	// Index is the log index of the check.
	Index uint64 `json:"index"`
	// Hashes are the partitions' state hashes at Index, as hex.
	Hashes []string `json:"hashes"`
	// Meta is the hash of the state besides the partitions at Index, as hex; empty if
	// not reported.
	Meta string `json:"meta,omitempty"`
}

// NewStatusJSON converts a wire status to its JSON form.
func NewStatusJSON(st wire.Status) StatusJSON {
	s := StatusJSON{Status: st, Hashes: HexHashes(st.Hashes)}
	for _, h := range st.HashChecks {
		s.HashChecks = append(s.HashChecks, HashCheckJSON{Index: h.Index, Hashes: HexHashes(h.Hashes), Meta: HexMeta(h.Meta)})
	}
	return s
}

// HexMeta formats a meta hash as a 16-digit hex string; 0 (not reported) as "".
func HexMeta(h uint64) string {
	if h == 0 {
		return ""
	}
	return fmt.Sprintf("%016x", h)
}

// HexHashes formats state hashes as 16-digit hex strings.
func HexHashes(hs []uint64) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = fmt.Sprintf("%016x", h)
	}
	return out
}
