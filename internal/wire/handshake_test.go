package wire

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

type serverResult struct {
	hello Hello
	err   error
}

// serve runs ServerHandshake on nc in a goroutine, closing nc if it fails, as a server does.
func serve(ctx context.Context, nc net.Conn, clusterID, nodeID string) <-chan serverResult {
	out := make(chan serverResult, 1)
	go func() {
		h, err := ServerHandshake(ctx, nc, clusterID, nodeID)
		if err != nil {
			nc.Close()
		}
		out <- serverResult{h, err}
	}()
	return out
}

func TestHandshake(t *testing.T) {
	tests := []struct {
		clientCluster, serverCluster string
		want                         error
	}{
		{"prod", "prod", nil},
		{"", "prod", nil},
		{"prod", "", nil},
		{"", "", nil},
		{"prod", "staging", ErrClusterMismatch},
	}
	for i, tt := range tests {
		cc, sc := tcpPair(t)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		srv := serve(ctx, sc, tt.serverCluster, "node-7")
		reply, err := ClientHandshake(ctx, cc, tt.clientCluster)
		res := <-srv
		cancel()
		if !errors.Is(err, tt.want) {
			t.Errorf("#%d: client: got %v, want %v", i, err, tt.want)
		}
		if !errors.Is(res.err, tt.want) {
			t.Errorf("#%d: server: got %v, want %v", i, res.err, tt.want)
		}
		if tt.want != nil {
			var we *Error
			if !errors.As(err, &we) || we.Code != CodeOf(tt.want) {
				t.Errorf("#%d: client: got %#v, want the server's *Error with code %v", i, err, CodeOf(tt.want))
			}
			continue
		}
		want := HelloReply{Version: ProtocolVersion, ClusterID: tt.serverCluster, NodeID: "node-7"}
		if reply != want {
			t.Errorf("#%d: reply: got %+v, want %+v", i, reply, want)
		}
		if want := (Hello{Version: ProtocolVersion, ClusterID: tt.clientCluster}); res.hello != want {
			t.Errorf("#%d: server saw: got %+v, want %+v", i, res.hello, want)
		}
	}
}

// TestHandshakeThenConn checks that the handshake leaves the connection aligned on frames
// and without deadlines, ready for NewConn.
func TestHandshakeThenConn(t *testing.T) {
	cc, sc := tcpPair(t)
	const handshakeTimeout = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	defer cancel()
	srv := serve(ctx, sc, "c", "n")
	if _, err := ClientHandshake(ctx, cc, "c"); err != nil {
		t.Fatal(err)
	}
	if res := <-srv; res.err != nil {
		t.Fatal(res.err)
	}
	client, err := NewConn(cc, ConnConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := NewConn(sc, ConnConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	time.Sleep(handshakeTimeout + 50*time.Millisecond) // past the handshake's deadline
	if err := client.SendRequest(context.Background(), &Request{ID: 1, Op: OpPing}); err != nil {
		t.Fatal(err)
	}
	var req Request
	if err := server.RecvRequest(&req); err != nil || req.ID != 1 || req.Op != OpPing {
		t.Fatalf("got %+v, %v, want ping 1", req, err)
	}
	if err := server.SendResponse(context.Background(), &Response{ID: 1}); err != nil {
		t.Fatal(err)
	}
	var resp Response
	if err := client.RecvResponse(&resp); err != nil || resp.ID != 1 || resp.Err() != nil {
		t.Fatalf("got %+v, %v, want OK response 1", resp, err)
	}
}

// TestServerRejectsBadHello sends hand-made first frames and checks the server answers
// with an error frame of the right code, then closes.
func TestServerRejectsBadHello(t *testing.T) {
	tests := []struct {
		name string
		body []byte
		want Code
	}{
		{"version 2", AppendHello(nil, &Hello{Version: 2, ClusterID: "c"}), CodeProtocolVersion},
		{"version 0", AppendHello(nil, &Hello{ClusterID: "c"}), CodeProtocolVersion},
		{"request first", AppendRequest(nil, &Request{ID: 1, Op: OpPing}), CodeProtocolVersion},
		{"wrong cluster", AppendHello(nil, &Hello{Version: ProtocolVersion, ClusterID: "other"}), CodeClusterMismatch},
		{"garbage", []byte{0xc1, 0xc1}, CodeMalformed},
		{"version as string", []byte{0x81, 0xa1, 'v', 0xa1, '1'}, CodeMalformed},
	}
	for i, tt := range tests {
		cc, sc := tcpPair(t)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		srv := serve(ctx, sc, "c", "n")
		if _, err := cc.Write(AppendFrame(nil, tt.body)); err != nil {
			t.Fatalf("#%d %s: %v", i, tt.name, err)
		}
		fr := NewFrameReader(cc, 0)
		body, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("#%d %s: %v", i, tt.name, err)
		}
		var resp Response
		if err := DecodeResponse(body, &resp); err != nil {
			t.Fatalf("#%d %s: %v", i, tt.name, err)
		}
		if resp.ID != 0 || resp.Code != tt.want || resp.Message == "" {
			t.Errorf("#%d %s: got %+v, want ID 0, code %v and a message", i, tt.name, resp, tt.want)
		}
		res := <-srv
		if CodeOf(res.err) != tt.want {
			t.Errorf("#%d %s: server: got %v, want code %v", i, tt.name, res.err, tt.want)
		}
		if _, err := fr.ReadFrame(); err != io.EOF {
			t.Errorf("#%d %s: after rejection: got %v, want io.EOF", i, tt.name, err)
		}
		cancel()
	}
}

// TestClientRejectsBadServerHello plays a server that answers with a hand-made frame.
func TestClientRejectsBadServerHello(t *testing.T) {
	tests := []struct {
		name  string
		reply []byte
		want  error
	}{
		{"version 2", AppendHello(nil, &Hello{Version: 2, ClusterID: "c"}), ErrProtocolVersion},
		{"wrong cluster", AppendHello(nil, &Hello{Version: ProtocolVersion, ClusterID: "d"}), ErrClusterMismatch},
		{"error response", AppendResponse(nil, &Response{Code: CodeShuttingDown}), ErrShuttingDown},
		{"garbage", []byte{0x92}, ErrMalformed},
		{"empty frame", nil, ErrEmptyFrame},
	}
	for i, tt := range tests {
		cc, sc := tcpPair(t)
		go func() {
			if _, err := NewFrameReader(sc, 0).ReadFrame(); err == nil {
				_, _ = sc.Write(AppendFrame(nil, tt.reply))
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := ClientHandshake(ctx, cc, "c")
		cancel()
		if !errors.Is(err, tt.want) {
			t.Errorf("#%d %s: got %v, want %v", i, tt.name, err, tt.want)
		}
	}
}

func TestHandshakeDeadlineAndCancel(t *testing.T) {
	t.Run("deadline", func(t *testing.T) {
		cc, _ := tcpPair(t) // the server never answers
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := ClientHandshake(ctx, cc, "c")
		if !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want a deadline error", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("got %v to time out, want about 50ms", d)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		_, sc := tcpPair(t) // the client never says hello
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := ServerHandshake(ctx, sc, "c", "n")
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	})
}
