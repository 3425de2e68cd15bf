package benchmarks

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// lazyAcker drives one session whose AckThrough trails what it has received by lag
// seqs, so the cluster keeps about lag of its results cached all the time, and each
// request frees the ones that fell lag behind. The Go client always acknowledges all it
// has, so this client speaks the wire protocol itself. Its workers each keep one
// counter.add in flight on a connection of their own and resend a request, with the
// same seq, until it has a definite answer.
//
// Like the Go client, it assigns a seq only while fewer than workers seqs above its
// contiguous answers are outstanding, so seq - AckThrough stays at most workers + lag,
// which the caller keeps within the servers' SessionWindow; the cached bytes stay far
// below MaxCachedResultBytes (a counter.add result is a few bytes). A refusal all the
// same is a definite answer: it is counted by its code, with its first message, and the
// seq is not resent.
type lazyAcker struct {
	addrs   []string
	tls     *tls.Config
	lag     uint64
	workers int
	args    []byte

	mu       sync.Mutex
	moved    sync.Cond // done advanced; with mu
	session  uint64
	next     uint64          // the next seq to assign, from 1
	done     uint64          // every seq up to it has a definite answer
	finished map[uint64]bool // the seqs above done that have one
	refused  map[wire.Code]int64
	message  map[wire.Code]string // the first refusal's message by code

	ops, resent atomic.Int64
}

func newLazyAcker(addrs []string, tlsCfg *tls.Config, workers int, lag uint64) *lazyAcker {
	args, err := msgpack.Marshal(builtin.CounterAddArgs{Delta: 1})
	if err != nil {
		panic(err)
	}
	l := &lazyAcker{addrs: addrs, tls: tlsCfg, lag: lag, workers: workers, args: args, next: 1,
		finished: map[uint64]bool{}, refused: map[wire.Code]int64{}, message: map[wire.Code]string{}}
	l.moved.L = &l.mu
	return l
}

// run opens the session and drives it until ctx ends.
func (l *lazyAcker) run(ctx context.Context) error {
	w := &lazyConn{addrs: l.addrs, tls: l.tls}
	defer w.close()
	resp, err := w.until(ctx, &wire.Request{Op: wire.OpOpenSession}, &l.resent)
	if err != nil {
		return err
	}
	if resp.Code != wire.CodeOK || resp.Session == 0 {
		return fmt.Errorf("open session: %w", resp.Err())
	}
	l.session = resp.Session
	var wg sync.WaitGroup
	for i := range l.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.work(ctx, i)
		}()
	}
	wg.Wait()
	return nil
}

func (l *lazyAcker) work(ctx context.Context, i int) {
	w := &lazyConn{addrs: l.addrs, tls: l.tls, at: i}
	defer w.close()
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	for {
		seq, ack := l.assign()
		if ctx.Err() != nil {
			l.finish(seq, nil) // the load is over: seq is never sent
			return
		}
		req := wire.Request{Op: wire.OpInvoke, Session: l.session, Seq: seq, AckThrough: ack,
			Procedure: builtin.CounterAdd, Key: fmt.Appendf(nil, "lazy%04d", rng.IntN(1024)), HasKey: true, Args: l.args}
		// The load ends with ctx, but a request once sent is seen through to its answer,
		// so that the session's table holds no request of unknown outcome at the end.
		resp, err := w.until(context.WithoutCancel(ctx), &req, &l.resent)
		if err != nil { // unreachable: until retries without end
			l.finish(seq, nil)
			return
		}
		l.finish(seq, &resp)
	}
}

// assign returns the next seq and the AckThrough to send with it, once fewer than
// workers seqs above done are outstanding.
func (l *lazyAcker) assign() (seq, ack uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.next-l.done > uint64(l.workers) {
		l.moved.Wait()
	}
	seq = l.next
	l.next++
	if l.done > l.lag {
		ack = l.done - l.lag
	}
	return seq, ack
}

// finish records seq's answer, or nil for a seq given up unsent, and wakes the workers
// waiting for done to advance.
func (l *lazyAcker) finish(seq uint64, resp *wire.Response) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case resp == nil:
	case resp.Code == wire.CodeOK:
		l.ops.Add(1)
	default:
		if l.refused[resp.Code] == 0 {
			l.message[resp.Code] = resp.Message
		}
		l.refused[resp.Code]++
	}
	l.finished[seq] = true
	for l.finished[l.done+1] {
		delete(l.finished, l.done+1)
		l.done++
		l.moved.Broadcast()
	}
}

// String reports what the client did.
func (l *lazyAcker) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	codes := make([]string, 0, len(l.refused))
	for c, n := range l.refused {
		codes = append(codes, fmt.Sprintf("%v %d (first: %q)", c, n, l.message[c]))
	}
	sort.Strings(codes)
	return fmt.Sprintf("lazy session %d: %d ok, refused [%s], %d attempts redirected or resent, answered through seq %d, acknowledging %d behind",
		l.session, l.ops.Load(), strings.Join(codes, ", "), l.resent.Load(), l.done, l.lag)
}

// refusedCount returns the definite error answers.
func (l *lazyAcker) refusedCount() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, v := range l.refused {
		n += v
	}
	return n
}

// lazyConn is one connection to whichever node leads, for one request at a time.
type lazyConn struct {
	addrs []string
	tls   *tls.Config
	at    int // index in addrs of the node to try next
	nc    net.Conn
	c     *wire.Conn
	id    uint64
}

// errStrayAnswer is an answer whose ID is not the request's: the connection is dropped.
var errStrayAnswer = errors.New("answer to another request")

// until sends req until some node gives it a definite answer: it moves to another node
// on a broken connection or an answer that the request did not run (NotLeader, NotReady,
// ShuttingDown, Divergent), and resends on an unknown outcome (UnknownOutcome, Timeout,
// Internal). Each resend counts in resent.
func (w *lazyConn) until(ctx context.Context, req *wire.Request, resent *atomic.Int64) (wire.Response, error) {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			resent.Add(1)
			if attempt%len(w.addrs) == 0 {
				t := time.NewTimer(20 * time.Millisecond) // each node refused: let an election end
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return wire.Response{}, ctx.Err()
				}
			}
		}
		resp, err := w.roundTrip(ctx, req)
		if err != nil {
			w.close()
			w.at++
			continue
		}
		switch resp.Code {
		case wire.CodeNotLeader, wire.CodeNotReady, wire.CodeShuttingDown, wire.CodeDivergent:
			w.close()
			w.at++
			if resp.Leader != "" {
				for i, a := range w.addrs {
					if a == resp.Leader {
						w.at = i
					}
				}
			}
			continue
		case wire.CodeUnknownOutcome, wire.CodeTimeout, wire.CodeInternal:
			continue
		}
		return resp, nil
	}
}

func (w *lazyConn) roundTrip(ctx context.Context, req *wire.Request) (wire.Response, error) {
	if w.c == nil {
		addr := w.addrs[w.at%len(w.addrs)]
		var d net.Dialer
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return wire.Response{}, err
		}
		cfg := w.tls.Clone()
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return wire.Response{}, err
		}
		nc = tc
		if _, err := wire.ClientHandshake(ctx, nc, ""); err != nil {
			nc.Close()
			return wire.Response{}, err
		}
		c, err := wire.NewConn(nc, wire.ConnConfig{})
		if err != nil {
			nc.Close()
			return wire.Response{}, err
		}
		w.nc, w.c = nc, c
	}
	w.id++
	req.ID = w.id
	if err := w.c.SendRequest(ctx, req); err != nil {
		return wire.Response{}, err
	}
	// A node that stops answering (killed, or cut off) must not hold the worker forever.
	w.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var resp wire.Response
	if err := w.c.RecvResponse(&resp); err != nil {
		return wire.Response{}, err
	}
	if resp.ID != req.ID {
		return wire.Response{}, fmt.Errorf("answer to request %d, want %d: %w", resp.ID, req.ID, errStrayAnswer)
	}
	return resp, nil
}

func (w *lazyConn) close() {
	if w.c != nil {
		w.c.Close()
		w.c, w.nc = nil, nil
	}
}
