package wire

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestClientHandshakeWithHTTPServer points ClientHandshake at a real HTTP server, as a
// client given a node's admin address would be: the server must answer the Hello at once
// (with a 400: the Hello ends a line), whatever the cluster id, and the client must say
// the address speaks HTTP (ErrSpeaksHTTP, wrapping ErrProtocolVersion), not report a
// frame of 1213486160 bytes ("HTTP") or time out.
func TestClientHandshakeWithHTTPServer(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	srv.Config.ReadHeaderTimeout = time.Minute // as a node's admin server: no early timeout
	srv.Start()
	defer srv.Close()
	for _, cluster := range []string{"", "c", "right", "lockstep", "a-much-longer-cluster-name"} {
		nc, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		start := time.Now()
		_, err = ClientHandshake(ctx, nc, cluster)
		cancel()
		nc.Close()
		if !errors.Is(err, ErrSpeaksHTTP) || !errors.Is(err, ErrProtocolVersion) || errors.Is(err, ErrFrameTooLarge) {
			t.Errorf("cluster %q: got %v, want ErrSpeaksHTTP (and ErrProtocolVersion)", cluster, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("cluster %q: took %v, want an answer at once", cluster, d)
		}
	}
}

// TestClientHandshakeHTTPPrefixOnly checks that only an answer starting "HTTP/" counts as
// HTTP: "HTTPX..." is still reported as a frame too large.
func TestClientHandshakeHTTPPrefixOnly(t *testing.T) {
	for _, tt := range []struct {
		reply string
		want  error
	}{
		{"HTTP/1.1 400 Bad Request\r\n\r\n", ErrSpeaksHTTP},
		{"HTTPX", ErrFrameTooLarge},
		{"HTTP", ErrFrameTooLarge},
	} {
		cc, sc := tcpPair(t)
		go func() {
			if _, err := NewFrameReader(sc, 0).ReadFrame(); err == nil {
				_, _ = sc.Write([]byte(tt.reply))
				sc.Close()
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := ClientHandshake(ctx, cc, "c")
		cancel()
		if !errors.Is(err, tt.want) {
			t.Errorf("%q: got %v, want %v", tt.reply, err, tt.want)
		}
		if tt.want != ErrSpeaksHTTP && errors.Is(err, ErrSpeaksHTTP) {
			t.Errorf("%q: got %v, want no ErrSpeaksHTTP", tt.reply, err)
		}
	}
}
