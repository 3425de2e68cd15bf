package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	runpprof "runtime/pprof"
	"time"
)

// errPprofAddr is the error of a --pprof address that is not a loopback address.
var errPprofAddr = errors.New("--pprof: want a loopback address (127.0.0.1:PORT, [::1]:PORT or localhost:PORT)")

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
		return nil, fmt.Errorf("%w: %q: %w", errPprofAddr, addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%w: got %q", errPprofAddr, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("%w: %q listens on %v", errPprofAddr, addr, ln.Addr())
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

// startCPUProfile writes a CPU profile to path until the returned stop is called; an
// empty path profiles nothing.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := runpprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() error {
		runpprof.StopCPUProfile()
		return f.Close()
	}, nil
}
