package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/sequencer"
)

// MaxArgsBytes is the largest encoded argument value a request may carry.
const MaxArgsBytes = partition.MaxValueBytes

// acceptLoop accepts client connections until the node closes.
func (n *Node) acceptLoop() {
	defer n.wg.Done()
	for {
		nc, err := n.ln.Accept()
		if err != nil {
			if n.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				n.log.Warn("accept failed", "err", err)
			}
			return
		}
		n.wg.Add(1)
		go n.serveConn(nc)
	}
}

// clientConn is one client connection. Its read loop decodes requests; answers come from
// the loop itself or from the sequencer's completion callback.
type clientConn struct {
	n    *Node
	c    *wire.Conn
	who  Identity      // the peer's verified certificate: what roles will check
	sem  chan struct{} // one slot per request being served
	subs subscriptions // push subscriptions (subscribe.go)
	// backups is the backup being read on the connection, if any (backup.go).
	backups backups
}

// serveConn handshakes and serves one connection. A frame that cannot be read closes
// only this connection (DESIGN.md invariant 7); a request that cannot be decoded gets a
// Malformed answer and the connection goes on.
func (n *Node) serveConn(nc net.Conn) {
	defer n.wg.Done()
	ln := n.ln.(*limitListener)
	var cc *clientConn // set before idle is armed
	idle := &idleConn{Conn: nc, timeout: n.cfg.Limits.IdleTimeout,
		active: func() bool { return cc.active() },
		onIdle: func() { ln.refused(limitIdle) }}
	nc, who, ok := n.handshake(ln, idle)
	if !ok {
		return
	}
	c, err := wire.NewConn(nc, wire.ConnConfig{SendQueueFrames: sendQueueFrames,
		MaxFrameBytes: n.cfg.Limits.MaxFrameBytes, ReadBudget: n.readBudget})
	if err != nil {
		nc.Close()
		return
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		c.Close()
		return
	}
	cc = &clientConn{n: n, c: c, who: who, sem: make(chan struct{}, n.cfg.MaxInflightPerConn)}
	n.conns[c] = cc
	n.mu.Unlock()
	idle.armed.Store(true)
	defer func() {
		n.mu.Lock()
		delete(n.conns, c)
		n.mu.Unlock()
		cc.closeSubscriptions()
		cc.backups.close()
		c.Close()
	}()
	for {
		var req wire.Request
		err := c.RecvRequest(&req)
		if err != nil {
			if errors.Is(err, wire.ErrMalformed) && req.ID != 0 {
				if !cc.acquire() {
					return
				}
				cc.reply(&wire.Response{ID: req.ID, Code: wire.CodeMalformed, Message: err.Error()})
				continue
			}
			if errors.Is(err, wire.ErrFrameTooLarge) || errors.Is(err, wire.ErrMalformed) || errors.Is(err, wire.ErrReadBudget) {
				resp := wire.ErrorResponse(0, err)
				if err := c.SendResponse(n.ctx, &resp); err != nil {
					cc.sendFailed(reasonOf(err), 0, err)
				}
				c.Shutdown(n.ctx)
			}
			return
		}
		if !cc.acquire() {
			return
		}
		cc.handle(&req)
	}
}

// sendQueueFrames bounds the responses waiting to be written to one client. A client that
// lets more pile up is not reading its responses, and its connection is closed.
const sendQueueFrames = 4096

// noWait is a context that is already done, never changed: sending with it never blocks.
var noWait = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// acquire takes an in-flight slot for the next request, waiting while the connection has
// MaxInflightPerConn requests being served; false if the node is closing.
func (cc *clientConn) acquire() bool {
	select {
	case cc.sem <- struct{}{}:
		return true
	case <-cc.n.ctx.Done():
		return false
	}
}

// reply queues resp and frees the request's in-flight slot.
func (cc *clientConn) reply(resp *wire.Response) {
	cc.send(resp)
	<-cc.sem
}

// send queues resp. It never blocks: it runs on the sequencer's completion goroutine,
// which every client's answers share. A response that cannot be queued is never dropped
// in silence: the failure is counted and logged (sendFailures), a client that does not
// read its responses (its queue is full) loses its connection instead of stalling the node
// (DESIGN.md invariant 7), and a response too large for a frame is replaced by a TooLarge
// error for the same request, so the client gets a definite answer at once instead of
// waiting for its timeout.
func (cc *clientConn) send(resp *wire.Response) {
	err := cc.c.SendResponse(noWait, resp)
	if err == nil {
		return
	}
	reason := reasonOf(err)
	cc.sendFailed(reason, resp.ID, err)
	switch reason {
	case sendQueueFull:
		cc.c.Close()
	case sendTooLarge:
		// A few dozen bytes: this send cannot be too large in turn.
		cc.send(&wire.Response{ID: resp.ID, Code: wire.CodeTooLarge,
			Message: fmt.Sprintf("the response does not fit one frame (%v)", err)})
	}
}

// sendFailed counts and logs a response to request id that could not be queued.
func (cc *clientConn) sendFailed(reason sendReason, id uint64, err error) {
	cc.n.metrics.sendFailures.record(cc.n.log, reason, cc.c.RemoteAddr().String(), id, err)
}

// maxMessageBytes bounds the text of an error response. A procedure's error or panic
// message is its own and of any length; cut, it cannot push an answer over a frame.
const maxMessageBytes = 8 << 10

func (cc *clientConn) fail(id uint64, err error) {
	resp := wire.ErrorResponse(id, cc.n.toWire(err))
	resp.Message = truncateMessage(resp.Message, maxMessageBytes)
	cc.reply(&resp)
}

// truncateMessage returns msg cut to at most max bytes on a UTF-8 boundary, marked as cut.
func truncateMessage(msg string, max int) string {
	const mark = " …(truncated)"
	if len(msg) <= max {
		return msg
	}
	cut := max - len(mark)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + mark
}

func (cc *clientConn) handle(req *wire.Request) {
	n := cc.n
	if !cc.authorize(req) {
		return
	}
	switch req.Op {
	case wire.OpPing:
		cc.reply(&wire.Response{ID: req.ID})
	case wire.OpStatus:
		st := n.Status()
		v, err := msgpack.Marshal(&st)
		if err != nil {
			cc.fail(req.ID, err)
			return
		}
		cc.reply(&wire.Response{ID: req.ID, Value: v})
	case wire.OpProcedures:
		cc.procedures(req)
	case wire.OpProcessors:
		cc.processors(req)
	case wire.OpStreamRead:
		cc.readStream(req)
	case wire.OpSubscribe:
		cc.subscribe(req)
	case wire.OpCredit:
		cc.credit(req)
		<-cc.sem // one-way: no answer frees the slot
	case wire.OpUnsubscribe:
		cc.unsubscribe(req)
	case wire.OpOpenSession:
		cc.submit(req.ID, batch.Item{Kind: batch.KindOpenSession})
	case wire.OpCloseSession:
		cc.submit(req.ID, batch.Item{Kind: batch.KindCloseSession, Session: req.Session})
	case wire.OpInvoke:
		cc.invoke(req)
	case wire.OpJoin, wire.OpRemove, wire.OpTransferLeader, wire.OpRebuild:
		cc.admin(req)
	case wire.OpUsers:
		cc.users(req)
	case wire.OpClusterConfig:
		cc.clusterConfig(req)
	case wire.OpBackup:
		cc.backup(req)
	case wire.OpSQL:
		cc.sqlCommand(req)
	case wire.OpConfirmLeader:
		cc.confirmLeader(req)
	case wire.OpReadIndex:
		cc.serveReadIndex(req)
	default:
		cc.fail(req.ID, fmt.Errorf("%w: unknown op %v", wire.ErrMalformed, req.Op))
	}
}

// submit hands one item to the sequencer; the answer is sent when it is applied.
func (cc *clientConn) submit(id uint64, it batch.Item) {
	n := cc.n
	if err := n.ready(); err != nil {
		cc.fail(id, err)
		return
	}
	if err := n.leaderReady(); err != nil {
		cc.fail(id, err)
		return
	}
	call := getCall()
	call.cc, call.id, call.p.Item = cc, id, it
	if err := n.proposer.Submit(&call.p); err != nil {
		call.release()
		cc.fail(id, err)
	}
}

// errCatchingUp is why a leader refuses what only a leader serves until it has applied an
// entry of its own term (leading).
var errCatchingUp = fmt.Errorf("%w: new leader is catching up", wire.ErrNotReady)

// leaderReady returns nil if this node is the leader and ready to serve as one (leading):
// writes, and linearizable reads and read indexes; else why not.
func (n *Node) leaderReady() error {
	switch {
	case !n.proposer.IsLeader():
		return sequencer.ErrNotLeader
	case !n.leading():
		return errCatchingUp
	}
	return nil
}

// pendingCall is one request waiting in the sequencer. Every write has one, so they are
// pooled: the Proposal and its Done func are made once per pooled value, not per request.
type pendingCall struct {
	cc *clientConn
	id uint64
	p  sequencer.Proposal
}

var callPool sync.Pool // of *pendingCall

func getCall() *pendingCall {
	if c, ok := callPool.Get().(*pendingCall); ok {
		return c
	}
	c := &pendingCall{}
	c.p.Done = c.done
	return c
}

// done answers the request; the sequencer no longer touches the proposal once it runs.
func (c *pendingCall) done(res batch.Result, _ uint64, err error) {
	cc, id := c.cc, c.id
	c.release()
	if err == nil {
		err = res.Err
	}
	if err != nil {
		cc.fail(id, err)
		return
	}
	cc.reply(&wire.Response{ID: id, Value: res.Value, Session: res.Session})
}

func (c *pendingCall) release() {
	c.cc, c.id, c.p.Item = nil, 0, batch.Item{}
	callPool.Put(c)
}

// queryInput is the read-only input of the invocation it, run off the log.
func queryInput(it *batch.Item) *partition.Input {
	return &partition.Input{Procedure: it.Procedure, Key: it.Key, Partition: int(it.Partition), Scope: it.Scope, Args: it.Args}
}

// invoke validates an invocation, then runs it through the log, or answers a session-less
// read off the log: linearizable (readindex.go), bounded-staleness or at consistency Any.
// Nothing invalid enters the log.
func (cc *clientConn) invoke(req *wire.Request) {
	n := cc.n
	info, ok := n.state.LookupProcedure(req.Procedure)
	if !ok {
		cc.fail(req.ID, fmt.Errorf("%w: %q", wire.ErrUnknownProcedure, req.Procedure))
		return
	}
	if len(req.Args) > MaxArgsBytes {
		cc.fail(req.ID, fmt.Errorf("%w: arguments of %d bytes, limit %d", wire.ErrTooLarge, len(req.Args), MaxArgsBytes))
		return
	}
	it := batch.Item{Kind: batch.KindInvoke, Session: req.Session, Seq: req.Seq, AckThrough: req.AckThrough,
		Procedure: info.Name, Args: req.Args}
	P := n.state.Partitions()
	if info.Multi {
		it.Partition = -1
		it.Scope = n.allPartitions // shared and never modified
		if len(req.Keys) > 0 {
			it.Scope = make([]int, 0, len(req.Keys))
			for _, k := range req.Keys {
				if err := checkKey(k); err != nil {
					cc.fail(req.ID, err)
					return
				}
				it.Scope = append(it.Scope, partition.PartitionOf(k, P))
			}
			slices.Sort(it.Scope)
			it.Scope = slices.Compact(it.Scope)
		}
	} else {
		if !req.HasKey {
			cc.fail(req.ID, fmt.Errorf("%w: %s needs a partition key", wire.ErrBadArguments, info.Name))
			return
		}
		if err := checkKey(req.Key); err != nil {
			cc.fail(req.ID, err)
			return
		}
		it.Key = req.Key
		it.Partition = int32(partition.PartitionOf(req.Key, P))
	}
	switch req.Consistency {
	case wire.ConsistencyLinearizable, wire.ConsistencyLinearizableRead:
		switch {
		case info.ReadOnly && req.Session == 0:
			// Off the log: the leader confirms its leadership, then reads (readindex.go).
			cc.readLinearizable(req.ID, queryInput(&it))
			return
		case req.Consistency == wire.ConsistencyLinearizableRead:
			cc.fail(req.ID, fmt.Errorf("%w: consistency %d is a session-less read; %s writes (invoke it in a session)", wire.ErrBadArguments, req.Consistency, info.Name))
			return
		}
	case wire.ConsistencyAny, wire.ConsistencyBounded:
		if !info.ReadOnly {
			cc.fail(req.ID, fmt.Errorf("%w: consistency %d is for read-only procedures; %s writes", wire.ErrBadArguments, req.Consistency, info.Name))
			return
		}
		in := queryInput(&it)
		if req.Consistency == wire.ConsistencyBounded {
			if req.MaxLag == 0 || req.MaxLag > math.MaxInt64 {
				cc.fail(req.ID, fmt.Errorf("%w: bounded-staleness read with a staleness bound of %d ns, want 1 to %d", wire.ErrBadArguments, req.MaxLag, int64(math.MaxInt64)))
				return
			}
			cc.readBounded(req.ID, in, time.Duration(req.MaxLag))
			return
		}
		if err := n.ready(); err != nil {
			cc.fail(req.ID, err)
			return
		}
		cc.answerQuery(req.ID, in)
		return
	default:
		cc.fail(req.ID, fmt.Errorf("%w: unknown consistency level %d", wire.ErrBadArguments, req.Consistency))
		return
	}
	if ack := plantedLostWrite(info.Name); ack != nil { // a test-only build's planted bug; nil in a normal build
		cc.reply(&wire.Response{ID: req.ID, Value: ack, Session: req.Session})
		return
	}
	cc.submit(req.ID, it)
}

func checkKey(k []byte) error {
	switch {
	case len(k) == 0:
		return fmt.Errorf("%w: empty partition key", wire.ErrBadArguments)
	case len(k) > partition.MaxKeyBytes:
		return fmt.Errorf("%w: partition key of %d bytes, limit %d", wire.ErrBadArguments, len(k), partition.MaxKeyBytes)
	}
	return nil
}
