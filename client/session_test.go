package client

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// windowClient returns a Client with a live session of the given window and no network,
// to exercise sequence numbers and AckThrough alone.
func windowClient(window int) *Client {
	c := &Client{}
	c.sess.init(window)
	c.sess.cur = c.sess.newSession(1)
	return c
}

// tryAcquire assigns a seq if the window has room, without waiting.
func tryAcquire(t *testing.T, c *Client) (slot, bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sl, err := c.acquire(ctx)
	return sl, err == nil
}

// TestAckThroughModel checks AckThrough against a model under random completion orders:
// it is the highest seq with every seq up to it finished, and a seq is only assigned while
// it is at most window above AckThrough (the servers' window, DESIGN.md section 5).
func TestAckThroughModel(t *testing.T) {
	for _, window := range []int{1, 2, 7, 64} {
		rng := rand.New(rand.NewPCG(uint64(window), 1))
		c := windowClient(window)
		s := c.sess.cur
		finished := map[uint64]bool{}
		var open []slot
		var next, model uint64 = 1, 0 // model: the AckThrough the rule defines
		for step := range 5000 {
			if rng.IntN(2) == 0 {
				sl, ok := tryAcquire(t, c)
				wantOK := next-model <= uint64(window)
				if ok != wantOK {
					t.Fatalf("window %d step %d: acquire ok = %v, want %v (next %d, ack %d)", window, step, ok, wantOK, next, model)
				}
				if ok {
					if sl.seq != next {
						t.Fatalf("window %d step %d: got seq %d, want %d", window, step, sl.seq, next)
					}
					next++
					open = append(open, sl)
				}
				continue
			}
			if len(open) == 0 {
				continue
			}
			i := rng.IntN(len(open))
			sl := open[i]
			open = append(open[:i], open[i+1:]...)
			c.sess.release(sl)
			finished[sl.seq] = true
			for finished[model+1] {
				model++
			}
			if got := c.sess.ackThrough(s); got != model {
				t.Fatalf("window %d step %d: released %d: AckThrough %d, want %d", window, step, sl.seq, got, model)
			}
		}
	}
}

// TestAckThroughOutOfOrder runs concurrent invocations whose answers arrive out of order
// and checks the AckThrough the client keeps and sends.
func TestAckThroughOutOfOrder(t *testing.T) {
	const n = 8
	hold := make(chan held, n+1)
	node := startNode(t, "n", func(fc *fakeConn, req wire.Request) { hold <- held{fc, req} })
	c := dial(t, testConfig(t, node.addr))

	results := make(chan int64, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.CounterAdd(context.Background(), "k", 1)
			if err != nil {
				t.Error(err)
			}
			results <- v
		}()
	}
	bySeq := map[uint64]held{}
	for range n {
		h := recvHeld(t, hold)
		if h.req.AckThrough != 0 {
			t.Errorf("seq %d sent with AckThrough %d before any answer, want 0", h.req.Seq, h.req.AckThrough)
		}
		bySeq[h.req.Seq] = h
	}
	s := c.sess.cur
	done := map[uint64]bool{}
	for _, seq := range []uint64{3, 1, 2, 8, 5, 4, 7, 6} {
		h, ok := bySeq[seq]
		if !ok {
			t.Fatalf("no request with seq %d; got %v", seq, bySeq)
		}
		h.fc.reply(wire.Response{ID: h.req.ID, Value: value(t, int64(seq))})
		if got := <-results; got != int64(seq) {
			t.Fatalf("answered seq %d, a call returned %d", seq, got)
		}
		done[seq] = true
		var want uint64
		for done[want+1] {
			want++
		}
		if got := c.sess.ackThrough(s); got != want {
			t.Errorf("after seq %d: AckThrough %d, want %d", seq, got, want)
		}
	}
	wg.Wait()

	errc := make(chan error, 1)
	go func() { _, err := c.CounterAdd(context.Background(), "k", 1); errc <- err }()
	h := recvHeld(t, hold)
	if h.req.Seq != n+1 || h.req.AckThrough != n {
		t.Errorf("next request: seq %d, AckThrough %d, want %d, %d", h.req.Seq, h.req.AckThrough, n+1, n)
	}
	h.fc.reply(wire.Response{ID: h.req.ID, Value: value(t, int64(0))})
	if err := waitErr(t, errc); err != nil {
		t.Fatal(err)
	}
}

// TestWindowNeverExceeded holds the oldest request while later ones finish: no request may
// go out more than MaxInflight above the AckThrough it carries, and the one beyond the
// window goes out only after the oldest is answered.
func TestWindowNeverExceeded(t *testing.T) {
	const window = 4
	var mu sync.Mutex
	var events []string // what the node saw and what the test did, in order
	hold := make(chan held, 2*window)
	node := startNode(t, "n", func(fc *fakeConn, req wire.Request) {
		mu.Lock()
		events = append(events, fmt.Sprintf("recv %d ack %d", req.Seq, req.AckThrough))
		mu.Unlock()
		if req.Seq-req.AckThrough > window {
			t.Errorf("seq %d sent with AckThrough %d: beyond the window of %d", req.Seq, req.AckThrough, window)
		}
		hold <- held{fc, req}
	})
	cfg := testConfig(t, node.addr)
	cfg.MaxInflight = window
	c := dial(t, cfg)

	errs := make(chan error, window+1)
	call := func() {
		_, err := c.CounterAdd(context.Background(), "k", 1)
		errs <- err
	}
	for range window {
		go call()
	}
	bySeq := map[uint64]held{}
	for range window {
		h := recvHeld(t, hold)
		bySeq[h.req.Seq] = h
	}
	go call() // seq 5: no room until seq 1 is answered
	answer := func(seq uint64) {
		mu.Lock()
		events = append(events, fmt.Sprintf("answer %d", seq))
		mu.Unlock()
		h := bySeq[seq]
		h.fc.reply(wire.Response{ID: h.req.ID, Value: value(t, int64(seq))})
		if err := waitErr(t, errs); err != nil {
			t.Fatal(err)
		}
	}
	for seq := uint64(2); seq <= window; seq++ {
		answer(seq)
	}
	answer(1)
	h := recvHeld(t, hold)
	if h.req.Seq != window+1 || h.req.AckThrough != window {
		t.Errorf("request beyond the window: seq %d, AckThrough %d, want %d, %d", h.req.Seq, h.req.AckThrough, window+1, window)
	}
	bySeq[h.req.Seq] = h
	answer(window + 1)

	mu.Lock()
	defer mu.Unlock()
	recv5, answer1 := -1, -1
	for i, e := range events {
		switch e {
		case fmt.Sprintf("recv %d ack %d", window+1, window):
			recv5 = i
		case "answer 1":
			answer1 = i
		}
	}
	if recv5 < answer1 {
		t.Errorf("seq %d reached the node before seq 1 was answered: %v", window+1, events)
	}
}

// TestInvokeMultiKeys checks the request of a multi-partition invocation.
func TestInvokeMultiKeys(t *testing.T) {
	node := startNode(t, "n", func(fc *fakeConn, req wire.Request) {
		fc.reply(wire.Response{ID: req.ID, Value: value(t, builtin.BankTransferResult{FromBalance: 1, ToBalance: 2})})
	})
	c := dial(t, testConfig(t, node.addr))
	res, err := c.BankTransfer(context.Background(), "alice", "bob", 5)
	if err != nil || res != (builtin.BankTransferResult{FromBalance: 1, ToBalance: 2}) {
		t.Fatalf("BankTransfer: got %+v, %v", res, err)
	}
	r := node.requests(wire.OpInvoke)[0]
	var args builtin.BankTransferArgs
	if err := msgpack.Unmarshal(r.Args, &args); err != nil {
		t.Fatal(err)
	}
	if r.HasKey || len(r.Keys) != 2 || string(r.Keys[0]) != "alice" || string(r.Keys[1]) != "bob" ||
		args != (builtin.BankTransferArgs{From: "alice", To: "bob", Amount: 5}) {
		t.Errorf("request: got %+v, args %+v", r, args)
	}
	if _, err := c.BankTotal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := node.requests(wire.OpInvoke)[1]; r.HasKey || len(r.Keys) != 0 || r.Procedure != "bank.total" {
		t.Errorf("all-partition request: got %+v", r)
	}
}
