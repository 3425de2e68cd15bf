package runner

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"
)

// TestStartPprofLoopbackOnly checks that --pprof refuses every address another host could
// reach (it has no TLS and no authentication), is off when empty, and serves the profiler
// on a loopback address.
func TestStartPprofLoopbackOnly(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.com:0", "127.0.0.1"} {
		p, err := startPprof(addr, log)
		if !errors.Is(err, ErrPprofAddr) {
			p.close()
			t.Errorf("#%d %q: got %v, want ErrPprofAddr", i, addr, err)
		}
	}
	if p, err := startPprof("", log); p != nil || err != nil {
		t.Errorf("empty address: got %v, %v, want nil, nil", p, err)
	}
	p, err := startPprof("127.0.0.1:0", log)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	resp, err := http.Get("http://" + p.addr + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/debug/pprof/cmdline: got %s, want 200", resp.Status)
	}
}
