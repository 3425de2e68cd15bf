package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
)

func newConnPair(t *testing.T, clientCfg, serverCfg ConnConfig) (client, server *Conn) {
	t.Helper()
	cc, sc := tcpPair(t)
	client, err := NewConn(cc, clientCfg)
	if err != nil {
		t.Fatal(err)
	}
	server, err = NewConn(sc, serverCfg)
	if err != nil {
		client.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return client, server
}

// TestConnConcurrentSenders sends from many goroutines at once through a small queue and
// checks that every frame arrives whole, and each sender's frames in order.
func TestConnConcurrentSenders(t *testing.T) {
	const senders, perSender = 16, 300
	client, server := newConnPair(t, ConnConfig{SendQueueFrames: 8, WriteBufferBytes: 512}, ConnConfig{})
	received := make(chan error, 1)
	go func() {
		last := make([]uint64, senders)
		for range senders * perSender {
			var r Request
			if err := server.RecvRequest(&r); err != nil {
				received <- err
				return
			}
			if r.Seq != last[r.Session]+1 || len(r.Args) != int(r.Seq) {
				received <- fmt.Errorf("sender %d: got seq %d with %d bytes after %d", r.Session, r.Seq, len(r.Args), last[r.Session])
				return
			}
			last[r.Session] = r.Seq
		}
		received <- nil
	}()
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for s := range senders {
		wg.Go(func() {
			for seq := uint64(1); seq <= perSender; seq++ {
				r := Request{ID: uint64(s)<<32 | seq, Op: OpInvoke, Session: uint64(s), Seq: seq, Args: make([]byte, seq)}
				if err := client.SendRequest(context.Background(), &r); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("send: %v", err)
	}
	if err := <-received; err != nil {
		t.Error(err)
	}
}

// TestConnPipelinedOutOfOrder has the server answer a window of requests in reverse
// order; the client matches responses to requests by ID.
func TestConnPipelinedOutOfOrder(t *testing.T) {
	const window = 50
	client, server := newConnPair(t, ConnConfig{}, ConnConfig{})
	served := make(chan error, 1)
	go func() {
		reqs := make([]Request, window)
		for i := range reqs {
			if err := server.RecvRequest(&reqs[i]); err != nil {
				served <- err
				return
			}
		}
		for i := window - 1; i >= 0; i-- {
			resp := Response{ID: reqs[i].ID, Value: reqs[i].Args}
			if err := server.SendResponse(context.Background(), &resp); err != nil {
				served <- err
				return
			}
		}
		served <- nil
	}()
	for i := range window {
		r := Request{ID: uint64(1000 + i), Op: OpInvoke, Args: []byte{byte(i)}}
		if err := client.SendRequest(context.Background(), &r); err != nil {
			t.Fatal(err)
		}
	}
	for i := range window {
		var resp Response
		if err := client.RecvResponse(&resp); err != nil {
			t.Fatal(err)
		}
		wantID := uint64(1000 + window - 1 - i)
		if resp.ID != wantID || len(resp.Value) != 1 || uint64(resp.Value[0])+1000 != resp.ID {
			t.Errorf("#%d: got %+v, want ID %d with its request's args", i, resp, wantID)
		}
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

func TestConnShutdownDeliversQueuedFrames(t *testing.T) {
	const frames = 2000
	client, server := newConnPair(t, ConnConfig{SendQueueFrames: frames}, ConnConfig{})
	for i := range frames {
		if err := client.Send(context.Background(), []byte{byte(i), 1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range frames {
		body, err := server.Recv()
		if err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		if body[0] != byte(i) {
			t.Fatalf("#%d: got frame %d, want %d", i, body[0], byte(i))
		}
	}
	if _, err := server.Recv(); err != io.EOF {
		t.Errorf("after shutdown: got %v, want io.EOF", err)
	}
	if err := client.Send(context.Background(), []byte{1}); !errors.Is(err, net.ErrClosed) {
		t.Errorf("send after shutdown: got %v, want net.ErrClosed", err)
	}
}

// TestConnBoundedQueue checks that a peer that does not read makes Send block, not grow
// memory, and that Close releases blocked senders and receivers.
func TestConnBoundedQueue(t *testing.T) {
	nc, peer := net.Pipe() // a peer that never reads: writes block
	defer peer.Close()
	c, err := NewConn(nc, ConnConfig{SendQueueFrames: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Frames larger than the write buffer go straight to the connection, so the writer
	// blocks on the first one whatever it coalesces.
	big := make([]byte, 1<<20)
	if !sendUntilBlocked(t, 10, func(ctx context.Context) error { return c.Send(ctx, big) }) {
		t.Fatalf("got 10 sends queued, want Send to block past the queue bound")
	}
	recvErr := make(chan error, 1)
	go func() {
		_, err := c.Recv()
		recvErr <- err
	}()
	sendErr := make(chan error, 1)
	go func() { sendErr <- c.Send(context.Background(), []byte{1}) }()
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := <-sendErr; !errors.Is(err, net.ErrClosed) {
		t.Errorf("blocked send: got %v, want net.ErrClosed", err)
	}
	// net.Pipe reports its own closed error where TCP reports net.ErrClosed.
	if err := <-recvErr; !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("blocked recv: got %v, want a closed-connection error", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second close: got %v, want nil", err)
	}
}

func TestConnSendRejectsBadSizes(t *testing.T) {
	client, _ := newConnPair(t, ConnConfig{MaxFrameBytes: 100}, ConnConfig{})
	ctx := context.Background()
	tests := []struct {
		send func() error
		want error
	}{
		{func() error { return client.Send(ctx, nil) }, ErrEmptyFrame},
		{func() error { return client.Send(ctx, make([]byte, 101)) }, ErrFrameTooLarge},
		{func() error { return client.SendRequest(ctx, &Request{ID: 1, Args: make([]byte, 100)}) }, ErrFrameTooLarge},
		{func() error { return client.SendResponse(ctx, &Response{ID: 1, Value: make([]byte, 100)}) }, ErrFrameTooLarge},
		{func() error { return client.Send(ctx, make([]byte, 100)) }, nil},
	}
	for i, tt := range tests {
		if err := tt.send(); !errors.Is(err, tt.want) {
			t.Errorf("#%d: got %v, want %v", i, err, tt.want)
		}
	}
}

func TestConnPeerGoneFailsSends(t *testing.T) {
	cc, sc := tcpPair(t)
	c, err := NewConn(cc, ConnConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc.Close()
	testutil.WaitFor(t, 5*time.Second, func() error {
		if err := c.Send(context.Background(), make([]byte, 1024)); err != nil {
			return nil
		}
		return errors.New("send still succeeds after the peer closed")
	})
	if _, err := c.Recv(); err == nil {
		t.Errorf("recv after failure: got nil, want an error")
	}
}

func TestConnConfigValidate(t *testing.T) {
	tests := []struct {
		cfg ConnConfig
		ok  bool
	}{
		{ConnConfig{}, true},
		{DefaultConnConfig(), true},
		{ConnConfig{MaxFrameBytes: -1}, false},
		{ConnConfig{MaxFrameBytes: 1 << 32}, false},
		{ConnConfig{SendQueueFrames: -1}, false},
		{ConnConfig{SendQueueBytes: -1}, false},
		{ConnConfig{ReadBufferBytes: -1}, false},
		{ConnConfig{WriteBufferBytes: -1}, false},
	}
	for i, tt := range tests {
		if err := tt.cfg.Validate(); (err == nil) != tt.ok {
			t.Errorf("#%d: got %v, want ok=%v", i, err, tt.ok)
		}
	}
	if got, want := (ConnConfig{}).withDefaults(), DefaultConnConfig(); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// BenchmarkConnSendParallel measures pipelined sends from many goroutines over TCP, with a
// reader draining the other end.
func BenchmarkConnSendParallel(b *testing.B) {
	cc, sc := tcpPair(b)
	client, err := NewConn(cc, ConnConfig{})
	if err != nil {
		b.Fatal(err)
	}
	server, err := NewConn(sc, ConnConfig{})
	if err != nil {
		b.Fatal(err)
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for {
			if _, err := server.Recv(); err != nil {
				return
			}
		}
	}()
	req := Request{ID: 1, Op: OpInvoke, Session: 1, Seq: 1, Procedure: "kv.put", Key: []byte("user:42"), HasKey: true, Args: make([]byte, 100)}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := client.SendRequest(context.Background(), &req); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if err := client.Shutdown(context.Background()); err != nil {
		b.Error(err)
	}
	<-drained
	server.Close()
}

// TestConnQueueBoundInBytes checks that a send blocks once SendQueueBytes of frames are
// pending, even far below SendQueueFrames, but a lone large frame still goes.
func TestConnQueueBoundInBytes(t *testing.T) {
	nc, peer := net.Pipe() // a peer that never reads: the writer blocks on its first write
	defer peer.Close()
	c, err := NewConn(nc, ConnConfig{SendQueueFrames: 1000, SendQueueBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !sendUntilBlocked(t, 20, func(ctx context.Context) error { return c.Send(ctx, make([]byte, 600)) }) {
		t.Fatalf("got 20 sends of 600 bytes queued, want Send to block past 1 KiB pending")
	}
}

// TestConnPushLeavesHalfTheQueue: pushes (SendPush) block once half the send queue is
// taken, while responses still find the other half.
func TestConnPushLeavesHalfTheQueue(t *testing.T) {
	nc, peer := net.Pipe() // a peer that never reads: the writer blocks on its first write
	defer peer.Close()
	c, err := NewConn(nc, ConnConfig{SendQueueFrames: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	push := &Response{Sub: 1, Entries: []StreamRecord{{Offset: 1, Value: make([]byte, 100)}}}
	if !sendUntilBlocked(t, 20, func(ctx context.Context) error { return c.SendPush(ctx, push) }) {
		t.Fatal("got 20 pushes queued, want SendPush to block at half the queue")
	}
	done, cancel := context.WithCancel(context.Background())
	cancel() // a send that would wait fails at once
	answers := 0
	for c.SendResponse(done, &Response{ID: uint64(answers + 1)}) == nil {
		answers++
	}
	if answers != 4 {
		t.Errorf("got %d responses queued behind the blocked pushes, want 4 (half of 8)", answers)
	}
}

// TestConnTrySendRequest checks that TrySendRequest queues while there is room and, once
// the queue is full, returns ErrQueueFull at once and queues nothing (the client relies
// on it never blocking to skip its context callback).
func TestConnTrySendRequest(t *testing.T) {
	nc, peer := net.Pipe() // a peer that never reads: the writer blocks on its first write
	defer peer.Close()
	c, err := NewConn(nc, ConnConfig{SendQueueFrames: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	big := make([]byte, 1<<20) // the writer takes it and blocks writing it
	if err := c.Send(context.Background(), big); err != nil {
		t.Fatal(err)
	}
	queued, full := 0, false
	for i := 0; i < 100 && !full; i++ {
		switch err := c.TrySendRequest(&Request{ID: uint64(i + 1), Op: OpPing}); {
		case err == nil:
			queued++
		case errors.Is(err, ErrQueueFull):
			full = true
		default:
			t.Fatalf("#%d: got %v, want nil or ErrQueueFull", i, err)
		}
	}
	if !full {
		t.Fatalf("got %d frames queued past a queue of 2, want ErrQueueFull", queued)
	}
	c.mu.Lock()
	frames := c.frames
	c.mu.Unlock()
	if frames != 2 {
		t.Errorf("got %d frames pending after ErrQueueFull, want the queue's 2", frames)
	}
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := c.TrySendRequest(&Request{ID: 999, Op: OpPing}); !errors.Is(err, net.ErrClosed) {
		t.Errorf("after close: got %v, want net.ErrClosed", err)
	}
}
