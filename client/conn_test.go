package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// pipeConn returns a started conn over an in-memory pipe whose send queue holds
// queueFrames frames, and the node's end of the pipe. Both are closed when the test ends.
func pipeConn(t *testing.T, queueFrames int) (*conn, *wire.Conn) {
	t.Helper()
	cp, sp := net.Pipe()
	wc, err := wire.NewConn(cp, wire.ConnConfig{SendQueueFrames: queueFrames})
	if err != nil {
		t.Fatal(err)
	}
	node, err := wire.NewConn(sp, wire.ConnConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cn := newConn("pipe", "n", wc, testLogger(t))
	var wg sync.WaitGroup
	wg.Add(1)
	cn.start(&wg)
	t.Cleanup(func() {
		cn.close()
		node.Close()
		wg.Wait()
	})
	return cn, node
}

// pendingLen returns how many callers wait on cn.
func pendingLen(cn *conn) int {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return len(cn.pending)
}

// fillSendQueue fills cn's send queue; the node never reads, so it stays full. The
// frames are large so that the writer's buffer fills, and its write blocks, at once.
func fillSendQueue(t *testing.T, cn *conn) {
	t.Helper()
	filler := make([]byte, 16<<10)
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err := cn.wc.Send(ctx, filler)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			return
		}
		if err != nil || i > 100 {
			t.Fatalf("filling the send queue: %d frames, %v", i, err)
		}
	}
}

// TestRoundTripBlockedSend checks that a send blocked on a full send queue ends when the
// attempt times out, the caller's context ends or the client closes, reports the request
// as not sent, and leaves no waiter behind.
func TestRoundTripBlockedSend(t *testing.T) {
	cn, _ := pipeConn(t, 1)
	fillSendQueue(t, cn)

	cancelled, cancel := context.WithCancel(context.Background())
	defer cancel()
	closing := make(chan struct{})
	// whenBlocked runs f once a request is registered: its send is blocked by then.
	whenBlocked := func(f func()) func() {
		return func() {
			go func() {
				waitFor(t, 10*time.Second, func() error {
					if pendingLen(cn) == 0 {
						return errors.New("no request registered yet")
					}
					return nil
				})
				time.Sleep(10 * time.Millisecond) // into the send, most likely; f works either way
				f()
			}()
		}
	}
	tests := []struct {
		name    string
		before  func()
		ctx     context.Context
		timeout time.Duration
		closing <-chan struct{}
		want    error
	}{
		{"attempt timeout", nil, context.Background(), 20 * time.Millisecond, nil, errTimedOut},
		{"caller context", whenBlocked(cancel), cancelled, time.Minute, nil, context.Canceled},
		{"client closed", whenBlocked(func() { close(closing); cn.abortSends() }), context.Background(), time.Minute, closing, ErrClosed},
		{"closed already", nil, context.Background(), time.Minute, closing, ErrClosed},
	}
	for i, tt := range tests {
		if tt.before != nil {
			tt.before()
		}
		start := time.Now()
		_, sent, err := cn.roundTrip(tt.ctx, &wire.Request{Op: wire.OpPing}, tt.timeout, tt.closing, nil)
		if !errors.Is(err, tt.want) || sent {
			t.Errorf("#%d %s: got sent %v, %v, want false, %v", i, tt.name, sent, err, tt.want)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("#%d %s: returned after %v", i, tt.name, d)
		}
		if n := pendingLen(cn); n != 0 {
			t.Errorf("#%d %s: %d waiters left pending, want 0", i, tt.name, n)
		}
	}
}

// TestRoundTripLateReplies runs many concurrent round trips whose answers come late, some
// after their caller gave up (attempt timeout or context), while waiters are reused: every
// answer a caller gets must be its own (waiter rule 1).
func TestRoundTripLateReplies(t *testing.T) {
	var answering sync.WaitGroup
	t.Cleanup(answering.Wait) // after pipeConn's cleanup has closed the pipe
	cn, node := pipeConn(t, 64)
	answering.Add(1)
	go func() { // the node: echo each request's Args, after a random delay
		defer answering.Done()
		for {
			var req wire.Request
			if err := node.RecvRequest(&req); err != nil {
				return
			}
			answering.Add(1)
			time.AfterFunc(time.Duration(rand.IntN(2000))*time.Microsecond, func() {
				defer answering.Done()
				_ = node.SendResponse(context.Background(), &wire.Response{ID: req.ID, Value: req.Args})
			})
		}
	}()

	var ok, gaveUp atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				args := fmt.Appendf(nil, "%d/%d", g, i)
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(3000))*time.Microsecond)
				if i%2 == 0 {
					cancel()
					ctx = context.Background()
				}
				timeout := time.Duration(500+rand.IntN(3000)) * time.Microsecond
				resp, _, err := cn.roundTrip(ctx, &wire.Request{Op: wire.OpInvoke, Args: args}, timeout, nil, nil)
				cancel()
				switch {
				case err == nil && !bytes.Equal(resp.Value, args):
					t.Errorf("request %s got the answer %s", args, resp.Value)
				case err == nil:
					ok.Add(1)
				case errors.Is(err, errTimedOut), errors.Is(err, context.DeadlineExceeded):
					gaveUp.Add(1)
				default:
					t.Errorf("request %s: %v", args, err)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d answered, %d given up", ok.Load(), gaveUp.Load())
	if ok.Load() == 0 || gaveUp.Load() == 0 {
		t.Errorf("answered %d, given up %d: want some of each", ok.Load(), gaveUp.Load())
	}
	if n := pendingLen(cn); n != 0 {
		t.Errorf("%d waiters left pending, want 0", n)
	}
}

// waitFor calls f until it returns nil, failing the test with f's last error after
// timeout.
func waitFor(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("waited %v: %v", timeout, err)
			return
		}
		time.Sleep(time.Millisecond)
	}
}
