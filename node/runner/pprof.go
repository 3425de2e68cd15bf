package runner

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// ErrPprofAddr is the error of a --pprof address (Config.Pprof) that is not a loopback address.
var ErrPprofAddr = errors.New("--pprof: want a loopback address (127.0.0.1:PORT, [::1]:PORT or localhost:PORT)")

// pprofServer serves net/http/pprof on a loopback address for profiling a running
// process. It has no TLS and no authentication, so it refuses any address another host
// could reach; it is off unless --pprof is given.
type pprofServer struct {
	addr string // the address it listens on
	srv  *http.Server
	done chan struct{}
}

// startPprof listens on addr, which must be a loopback address, and serves the
// /debug/pprof/ handlers there until close. An empty addr serves nothing (nil server).
func startPprof(addr string, log *slog.Logger) (*pprofServer, error) {
	if addr == "" {
		return nil, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrPprofAddr, addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%w: got %q", ErrPprofAddr, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("%w: %q listens on %v", ErrPprofAddr, addr, ln.Addr())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	p := &pprofServer{addr: ln.Addr().String(), srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{})}
	log.Warn("pprof serving without authentication", "addr", ln.Addr().String())
	go func() {
		defer close(p.done)
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("pprof server stopped", "err", err)
		}
	}()
	return p, nil
}

// close stops the server and waits for it; nil-safe.
func (p *pprofServer) close() {
	if p == nil {
		return
	}
	p.srv.Close()
	<-p.done
}
