package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
)

// The probe server (Config.ProbeAddr) is the node's health and readiness on plain HTTP,
// for what cannot present a client certificate: a Kubernetes kubelet's httpGet probe, a
// load balancer's health check. It serves /healthz and /readyz exactly as the admin
// server does and nothing else, so it shows no more than "up" and "ready or why not" to
// whoever reaches it; status and metrics stay behind mutual TLS on the admin port.

// ProbeHandler returns the probe server's endpoints:
//
//	GET /healthz  200 "ok" while the process serves HTTP
//	GET /readyz   200 "ready" if Readiness() is nil, else 503 and "not ready: " + the reason
//
// and 404 for every other path.
func (n *Node) ProbeHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", n.serveHealthz)
	mux.HandleFunc("GET /readyz", n.serveReadyz)
	return mux
}

func (n *Node) serveHealthz(w http.ResponseWriter, _ *http.Request) {
	fmt.Fprintln(w, "ok")
}

func (n *Node) serveReadyz(w http.ResponseWriter, _ *http.Request) {
	if err := n.Readiness(); err != nil {
		http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// ProbeAddr returns the address the probe server is bound to, or "" if the node runs none.
func (n *Node) ProbeAddr() string {
	if n.probe == nil {
		return ""
	}
	return n.probeLn.Addr().String()
}

// startProbe listens on addr and serves ProbeHandler over plain HTTP until stopProbe,
// with the admin server's limits (connections per listener and per address, timeouts).
func (n *Node) startProbe(addr string) error {
	raw, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("probe listener: %w", err)
	}
	lim := n.cfg.Limits
	ln := newLimitListener(raw, "probe", lim, n.metrics.limits)
	srv := &http.Server{
		Handler:           n.ProbeHandler(),
		ReadHeaderTimeout: min(adminHeaderTimeout, lim.AdminReadTimeout),
		ReadTimeout:       lim.AdminReadTimeout,
		WriteTimeout:      lim.AdminWriteTimeout,
		IdleTimeout:       lim.AdminIdleTimeout,
		MaxHeaderBytes:    lim.AdminMaxHeaderBytes,
	}
	n.probe, n.probeLn = srv, ln
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Warn("probe server stopped", "err", err)
		}
	}()
	n.log.Info("probe server listening (plain HTTP: /healthz, /readyz)", "addr", ln.Addr().String())
	return nil
}

// stopProbe stops the probe server as stopAdmin stops the admin server.
func (n *Node) stopProbe() {
	if n.probe == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminShutdownTimeout)
	defer cancel()
	if err := n.probe.Shutdown(ctx); err != nil {
		n.probe.Close()
	}
}
