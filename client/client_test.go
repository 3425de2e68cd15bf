package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Addrs, ok.Insecure = []string{"127.0.0.1:1"}, true
	zero := Config{Addrs: []string{"127.0.0.1:1"}, Insecure: true}
	with := func(f func(*Config)) Config {
		c := ok
		f(&c)
		return c
	}
	tests := []struct {
		cfg   Config
		valid bool
	}{
		{ok, true},
		{zero, true}, // zero fields take their defaults
		{with(func(c *Config) { c.MaxRetries = -1 }), true},
		{with(func(c *Config) { c.MaxInflight = MaxSessionWindow }), true},
		{with(func(c *Config) { c.RetryBackoff = 2 * time.Second }), false},                   // above MaxRetryBackoff
		{Config{Addrs: []string{"a:1"}, RetryBackoff: 2 * time.Second, Insecure: true}, true}, // MaxRetryBackoff follows
		{with(func(c *Config) { c.Insecure = false }), false},                                 // neither TLS nor Insecure
		{with(func(c *Config) { c.TLS = &tls.Config{} }), false},                              // both
		{Config{}, false},
		{with(func(c *Config) { c.Addrs = []string{"a:1", ""} }), false},
		{with(func(c *Config) { c.DialTimeout = -1 }), false},
		{with(func(c *Config) { c.RequestTimeout = -time.Second }), false},
		{with(func(c *Config) { c.RetryBackoff = -1 }), false},
		{with(func(c *Config) { c.SuspectAfter = -1 }), false},
		{with(func(c *Config) { c.MaxRetryBackoff = time.Millisecond }), false},
		{with(func(c *Config) { c.MaxInflight = MaxSessionWindow + 1 }), false},
		{with(func(c *Config) { c.MaxInflight = -1 }), false},
	}
	for i, tt := range tests {
		err := tt.cfg.Validate()
		if got := err == nil; got != tt.valid {
			t.Errorf("#%d: valid = %v (%v), want %v", i, got, err, tt.valid)
		}
		if err != nil && !errors.Is(err, ErrBadConfig) {
			t.Errorf("#%d: got %v, want an error wrapping ErrBadConfig", i, err)
		}
		if !tt.valid {
			if _, err := Dial(context.Background(), tt.cfg); !errors.Is(err, ErrBadConfig) {
				t.Errorf("#%d: Dial: got %v, want ErrBadConfig", i, err)
			}
		}
	}
}

func TestNotLeaderRedirect(t *testing.T) {
	b := startNode(t, "b", func(fc *fakeConn, req wire.Request) {
		fc.reply(wire.Response{ID: req.ID, Value: value(t, int64(7))})
	})
	a := newFakeNode(t, "a", func(fc *fakeConn, req wire.Request) {
		fc.reply(wire.Response{ID: req.ID, Code: wire.CodeNotLeader, Leader: b.addr})
	})
	c := dial(t, testConfig(t, a.addr))

	n, err := c.CounterAdd(context.Background(), "c", 1)
	if err != nil || n != 7 {
		t.Fatalf("CounterAdd: got %d, %v, want 7, nil", n, err)
	}
	if got := c.Leader(); got != b.addr {
		t.Errorf("Leader: got %s, want %s", got, b.addr)
	}
	if got := len(a.requests(wire.OpOpenSession)); got != 1 {
		t.Errorf("sessions asked of the follower: got %d, want 1", got)
	}
	if got := len(a.requests(wire.OpInvoke)); got != 0 {
		t.Errorf("invocations sent to the follower after the redirect: got %d, want 0", got)
	}
	inv := b.requests(wire.OpInvoke)
	if len(inv) != 1 {
		t.Fatalf("invocations at the leader: got %d, want 1", len(inv))
	}
	r := inv[0]
	var args builtin.CounterAddArgs
	if err := msgpack.Unmarshal(r.Args, &args); err != nil {
		t.Fatal(err)
	}
	if r.Procedure != "counter.add" || !r.HasKey || string(r.Key) != "c" || r.Session != 1 ||
		r.Seq != 1 || r.AckThrough != 0 || args.Delta != 1 || r.Consistency != 0 {
		t.Errorf("invocation: got %+v (args %+v)", r, args)
	}
}

// step is what a scripted node does with one invocation attempt.
type step struct {
	drop bool      // close the connection without answering
	code wire.Code // else answer with this code
}

// TestRetryRules checks the exactly-once rules of the package documentation (DESIGN.md
// invariant 3): every retry carries the same (session, seq); an expired session is
// replaced only for a request that cannot have run; otherwise the client reports
// ErrUnknownOutcome.
func TestRetryRules(t *testing.T) {
	type sent struct{ session, seq uint64 }
	drop := step{drop: true}
	code := func(c wire.Code) step { return step{code: c} }
	tests := []struct {
		name       string
		script     []step // the first attempts; later ones succeed
		maxRetries int
		want       []sent // the (session, seq) of every attempt
		wantErr    error
	}{
		{"ok", nil, 0, []sent{{1, 1}}, nil},
		{"unknown outcome", []step{code(wire.CodeUnknownOutcome)}, 0, []sent{{1, 1}, {1, 1}}, nil},
		{"dropped connection", []step{drop, drop}, 0, []sent{{1, 1}, {1, 1}, {1, 1}}, nil},
		{"not ready, overloaded, timeout", []step{code(wire.CodeNotReady), code(wire.CodeOverloaded), code(wire.CodeTimeout)}, 0,
			[]sent{{1, 1}, {1, 1}, {1, 1}, {1, 1}}, nil},
		{"not leader without hint", []step{code(wire.CodeNotLeader)}, 0, []sent{{1, 1}, {1, 1}}, nil},
		{"expired, never sent", []step{code(wire.CodeSessionExpired)}, 0, []sent{{1, 1}, {2, 1}}, nil},
		{"unknown session, never sent", []step{code(wire.CodeUnknownSession)}, 0, []sent{{1, 1}, {2, 1}}, nil},
		{"refused, then expired", []step{code(wire.CodeNotLeader), code(wire.CodeOverloaded), code(wire.CodeSessionExpired)}, 0,
			[]sent{{1, 1}, {1, 1}, {1, 1}, {2, 1}}, nil},
		{"expired twice", []step{code(wire.CodeSessionExpired), code(wire.CodeSessionExpired)}, 0,
			[]sent{{1, 1}, {2, 1}, {3, 1}}, nil},
		{"dropped, then expired", []step{drop, code(wire.CodeSessionExpired)}, 0, []sent{{1, 1}, {1, 1}}, ErrUnknownOutcome},
		{"unknown outcome, then expired", []step{code(wire.CodeUnknownOutcome), code(wire.CodeNotLeader), code(wire.CodeSessionExpired)}, 0,
			[]sent{{1, 1}, {1, 1}, {1, 1}}, ErrUnknownOutcome},
		{"shutting down, then expired", []step{code(wire.CodeShuttingDown), code(wire.CodeSessionExpired)}, 0,
			[]sent{{1, 1}, {1, 1}, {2, 1}}, nil},
		{"timeout, then expired", []step{code(wire.CodeTimeout), code(wire.CodeSessionExpired)}, 0,
			[]sent{{1, 1}, {1, 1}}, ErrUnknownOutcome},
		{"internal once", []step{code(wire.CodeInternal)}, 0, []sent{{1, 1}, {1, 1}}, nil},
		{"internal twice", []step{code(wire.CodeInternal), code(wire.CodeInternal)}, 0, []sent{{1, 1}, {1, 1}}, ErrInternal},
		{"internal, then expired", []step{code(wire.CodeInternal), code(wire.CodeSessionExpired)}, 0,
			[]sent{{1, 1}, {1, 1}}, ErrUnknownOutcome},
		{"expired in the new session after a drop", []step{code(wire.CodeSessionExpired), drop, code(wire.CodeSessionExpired)}, 0,
			[]sent{{1, 1}, {2, 1}, {2, 1}}, ErrUnknownOutcome},
		{"procedure error", []step{code(wire.CodeProcedureError)}, 0, []sent{{1, 1}}, ErrProcedure},
		{"bad arguments after a drop", []step{drop, code(wire.CodeBadArguments)}, 0, []sent{{1, 1}, {1, 1}}, ErrBadArguments},
		{"retries exhausted", []step{code(wire.CodeNotReady), code(wire.CodeNotReady), code(wire.CodeNotReady)}, 2,
			[]sent{{1, 1}, {1, 1}, {1, 1}}, ErrRetriesExhausted},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			script := tt.script
			n := startNode(t, "n", func(fc *fakeConn, req wire.Request) {
				mu.Lock()
				var s *step
				if len(script) > 0 {
					s = &script[0]
					script = script[1:]
				}
				mu.Unlock()
				switch {
				case s == nil:
					fc.reply(wire.Response{ID: req.ID, Value: value(t, int64(42))})
				case s.drop:
					fc.drop()
				default:
					fc.reply(wire.Response{ID: req.ID, Code: s.code, Message: "scripted"})
				}
			})
			cfg := testConfig(t, n.addr)
			cfg.MaxRetries = tt.maxRetries
			c := dial(t, cfg)
			got, err := c.CounterAdd(context.Background(), "k", 1)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && got != 42) {
				t.Errorf("#%d: got %d, %v, want 42, %v", i, got, err, tt.wantErr)
			}
			var we *Error
			if tt.wantErr == ErrProcedure && (!errors.As(err, &we) || we.Code != CodeProcedureError) {
				t.Errorf("#%d: got %#v, want a *Error with code ProcedureError", i, err)
			}
			var gotSent []sent
			for _, r := range n.requests(wire.OpInvoke) {
				gotSent = append(gotSent, sent{r.Session, r.Seq})
			}
			if !equal(gotSent, tt.want) {
				t.Errorf("#%d: attempts (session, seq): got %v, want %v", i, gotSent, tt.want)
			}
		})
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestContextDeadline(t *testing.T) {
	hold := make(chan held, 16)
	n := startNode(t, "n", func(fc *fakeConn, req wire.Request) { hold <- held{fc, req} })
	cfg := testConfig(t, n.addr)
	cfg.RequestTimeout = time.Minute
	c := dial(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.CounterAdd(ctx, "k", 1)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("returned after %v, want about 50ms", d)
	}
	if h := recvHeld(t, hold); h.req.Seq != 1 {
		t.Errorf("seq: got %d, want 1", h.req.Seq)
	}

	// The abandoned seq no longer holds AckThrough back: the next request acknowledges it.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	errc := make(chan error, 1)
	go func() { _, err := c.CounterAdd(ctx2, "k", 1); errc <- err }()
	h := recvHeld(t, hold)
	if h.req.Seq != 2 || h.req.AckThrough != 1 {
		t.Errorf("next request: seq %d, ack %d, want 2, 1", h.req.Seq, h.req.AckThrough)
	}
	h.fc.reply(wire.Response{ID: h.req.ID, Value: value(t, int64(1))})
	if err := waitErr(t, errc); err != nil {
		t.Fatal(err)
	}
}

func TestAttemptTimeoutRetriesSameSeq(t *testing.T) {
	var mu sync.Mutex
	attempts := 0
	n := startNode(t, "n", func(fc *fakeConn, req wire.Request) {
		mu.Lock()
		attempts++
		first := attempts == 1
		mu.Unlock()
		if !first { // the first attempt is never answered
			fc.reply(wire.Response{ID: req.ID, Value: value(t, int64(5))})
		}
	})
	cfg := testConfig(t, n.addr)
	c := dial(t, cfg)
	c.cfg.RequestTimeout = 20 * time.Millisecond // after Dial, so the session opens at leisure
	got, err := c.CounterAdd(context.Background(), "k", 1)
	if err != nil || got != 5 {
		t.Fatalf("got %d, %v, want 5, nil", got, err)
	}
	inv := n.requests(wire.OpInvoke)
	if len(inv) != 2 || inv[0].Seq != inv[1].Seq || inv[0].Session != inv[1].Session {
		t.Errorf("attempts: got %+v, want two with the same session and seq", inv)
	}
}

func TestCloseEndsSessionAndCalls(t *testing.T) {
	hold := make(chan held, 16)
	n := startNode(t, "n", func(fc *fakeConn, req wire.Request) { hold <- held{fc, req} })
	c := dial(t, testConfig(t, n.addr))
	errc := make(chan error, 1)
	go func() { _, err := c.CounterAdd(context.Background(), "k", 1); errc <- err }()
	recvHeld(t, hold) // in flight, never answered

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := waitErr(t, errc); !errors.Is(err, ErrClosed) {
		t.Errorf("call in flight: got %v, want ErrClosed", err)
	}
	cl := n.requests(wire.OpCloseSession)
	if len(cl) != 1 || cl[0].Session != 1 {
		t.Errorf("close session requests: got %+v, want one for session 1", cl)
	}
	if _, err := c.CounterAdd(context.Background(), "k", 1); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: got %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestDialUnreachable checks that Dial, with nothing listening at the seed, goes on
// trying until its context ends, MaxRetries notwithstanding, and then names the address
// in the context's error.
func TestDialUnreachable(t *testing.T) {
	n := newFakeNode(t, "n", func(*fakeConn, wire.Request) {})
	addr := n.addr
	n.close() // nothing listens there now
	cfg := testConfig(t, addr)
	cfg.MaxRetries = 2
	const wait = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	start := time.Now()
	_, err := Dial(ctx, cfg)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrRetriesExhausted) || !strings.Contains(err.Error(), addr) {
		t.Errorf("got %v, want the context's deadline naming %s", err, addr)
	}
	if d := time.Since(start); d < wait {
		t.Errorf("Dial gave up after %v, before its context's %v", d, wait)
	}
}

func TestReadAnyAndStreamsUseAnyReplica(t *testing.T) {
	notReady := func(fc *fakeConn, req wire.Request) {
		fc.reply(wire.Response{ID: req.ID, Code: wire.CodeNotReady})
	}
	a := startNode(t, "a", notReady)
	b := startNode(t, "b", func(fc *fakeConn, req wire.Request) {
		switch req.Op {
		case wire.OpInvoke:
			fc.reply(wire.Response{ID: req.ID, Value: value(t, builtin.KVGetResult{Value: []byte("v"), Found: true})})
		case wire.OpStreamRead:
			fc.reply(wire.Response{ID: req.ID, Records: [][]byte{[]byte("r5"), []byte("r6")}, NextOffset: req.Offset + 2})
		case wire.OpStatus:
			fc.reply(wire.Response{ID: req.ID, Value: value(t, wire.Status{NodeID: "b", State: "Follower", Ready: true, Partitions: 4})})
		}
	})
	c := dial(t, testConfig(t, b.addr, a.addr))
	ctx := context.Background()
	for i := range 3 { // round robin reaches a, which is not ready, then b
		var res builtin.KVGetResult
		if err := c.Query(ctx, "kv.get", []byte("k"), nil, &res, ReadAny); err != nil || string(res.Value) != "v" || !res.Found {
			t.Fatalf("#%d: Query: got %+v, %v", i, res, err)
		}
	}
	for _, r := range b.requests(wire.OpInvoke) {
		if r.Session != 0 || r.Seq != 0 || r.Consistency != wire.ConsistencyAny {
			t.Errorf("ReadAny query: got %+v, want no session and consistency Any", r)
		}
	}
	if len(a.requests(wire.OpInvoke)) == 0 {
		t.Errorf("round robin never asked a")
	}

	recs, next, err := c.ReadStream(ctx, "events", 3, 5, 10)
	if err != nil || next != 7 || len(recs) != 2 || recs[0].Offset != 5 || string(recs[1].Data) != "r6" || recs[1].Offset != 6 {
		t.Fatalf("ReadStream: got %+v, %d, %v", recs, next, err)
	}
	for _, r := range b.requests(wire.OpStreamRead) {
		if r.Stream != "events" || r.Partition != 3 || r.Offset != 5 || r.Max != 10 {
			t.Errorf("stream read: got %+v", r)
		}
	}
	if _, _, err := c.ReadStream(ctx, "events", -1, 0, 0); !errors.Is(err, ErrBadScope) {
		t.Errorf("negative partition: got %v, want ErrBadScope", err)
	}

	st, err := c.Status(ctx, b.addr)
	if err != nil || st.NodeID != "b" || !st.Ready || st.Partitions != 4 {
		t.Errorf("Status: got %+v, %v", st, err)
	}
	if _, err := c.Status(ctx, a.addr); !errors.Is(err, ErrNotReady) {
		t.Errorf("Status of a node that is not ready: got %v, want ErrNotReady", err)
	}
}

func TestLocalArgumentErrors(t *testing.T) {
	n := startNode(t, "n", func(fc *fakeConn, req wire.Request) { fc.reply(wire.Response{ID: req.ID}) })
	c := dial(t, testConfig(t, n.addr))
	ctx := context.Background()
	if err := c.Invoke(ctx, "kv.get", nil, nil, nil); !errors.Is(err, ErrBadArguments) {
		t.Errorf("empty key: got %v, want ErrBadArguments", err)
	}
	if err := c.Invoke(ctx, "kv.put", []byte("k"), make(chan int), nil); !errors.Is(err, ErrBadArguments) {
		t.Errorf("unencodable args: got %v, want ErrBadArguments", err)
	}
	if _, err := c.Vote(ctx, 12345678901, 1); !errors.Is(err, ErrBadArguments) {
		t.Errorf("11-digit phone: got %v, want ErrBadArguments", err)
	}
	if got := len(n.requests(wire.OpInvoke)); got != 0 {
		t.Errorf("requests sent: got %d, want 0", got)
	}
}

// TestCloseEndsWaits checks that Close ends calls waiting for room in the window and
// calls pausing between retries, with ErrClosed, at once.
func TestCloseEndsWaits(t *testing.T) {
	hold := make(chan held, 16)
	n := startNode(t, "n", func(fc *fakeConn, req wire.Request) {
		if string(req.Key) == "busy" {
			fc.reply(wire.Response{ID: req.ID, Code: wire.CodeOverloaded})
			return
		}
		hold <- held{fc, req}
	})
	cfg := testConfig(t, n.addr)
	cfg.MaxInflight = 1
	cfg.RetryBackoff = time.Minute
	cfg.MaxRetryBackoff = time.Minute
	c := dial(t, cfg)

	errc := make(chan error, 3)
	call := func(key string) { _, err := c.CounterAdd(context.Background(), key, 1); errc <- err }
	go call("k")
	recvHeld(t, hold) // in flight, never answered: the window is full
	go call("k")      // waits for room
	qerr := make(chan error, 1)
	go func() { // pauses for a minute after its first attempt
		qerr <- c.Query(context.Background(), "counter.get", []byte("busy"), nil, nil, ReadAny)
	}()
	waitFor(t, 10*time.Second, func() error {
		c.sess.mu.Lock()
		waiting := c.sess.cur != nil && c.sess.cur.waited
		c.sess.mu.Unlock()
		if got := len(n.requests(wire.OpInvoke)); got < 2 || !waiting {
			return fmt.Errorf("%d invocations received (want 2), a call waits for room: %v", got, waiting)
		}
		return nil
	})
	// The query's answer is in: it pauses now or soon, and Close ends it either way.
	time.Sleep(20 * time.Millisecond)

	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := waitErr(t, errc); !errors.Is(err, ErrClosed) {
			t.Errorf("#%d: got %v, want ErrClosed", i, err)
		}
	}
	if err := waitErr(t, qerr); !errors.Is(err, ErrClosed) {
		t.Errorf("query in backoff: got %v, want ErrClosed", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("calls ended %v after Close", d)
	}
	if got := len(n.requests(wire.OpInvoke)); got != 2 {
		t.Errorf("invocations received: got %d, want 2 (none after Close)", got)
	}
}

// TestConcurrentArgsAndResults runs concurrent invocations whose answers come late, with
// attempt timeouts and retries, against a node that echoes the arguments as the result:
// every call must get its own arguments back, whatever buffers and decoders the client
// reuses between calls.
func TestConcurrentArgsAndResults(t *testing.T) {
	type echo struct {
		Caller, Call int
		Pad          string
	}
	var answering sync.WaitGroup
	t.Cleanup(answering.Wait) // after the node is closed
	n := startNode(t, "n", func(fc *fakeConn, req wire.Request) {
		answering.Add(1)
		time.AfterFunc(time.Duration(rand.IntN(3000))*time.Microsecond, func() {
			defer answering.Done()
			fc.reply(wire.Response{ID: req.ID, Value: req.Args})
		})
	})
	cfg := testConfig(t, n.addr)
	cfg.MaxRetries = -1
	c := dial(t, cfg)
	c.cfg.RequestTimeout = 2 * time.Millisecond // after Dial: many attempts time out

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				args := echo{Caller: g, Call: i, Pad: strings.Repeat("x", rand.IntN(200))}
				var got echo
				if err := c.Invoke(context.Background(), "echo", []byte("k"), args, &got); err != nil {
					t.Errorf("%+v: %v", args, err)
				} else if got != args {
					t.Errorf("sent %+v, got %+v", args, got)
				}
			}
		}()
	}
	wg.Wait()
}
